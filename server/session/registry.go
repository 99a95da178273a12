package session

import "sync"

// registry is the hub's record of this server's connections and of the
// authenticated session of each player; it alone holds their lock. Every
// connection's goroutine is counted in it, so that a shutdown can wait
// for all of them.
type registry struct {
	mu       sync.Mutex
	sessions map[string]*Session   // by player, once authenticated
	conns    map[*Session]struct{} // every open connection, for the reaper and the shutdown
	closing  bool                  // the shutdown began: no new connection
	running  sync.WaitGroup        // connections' goroutines
}

func newRegistry() *registry {
	return &registry{sessions: map[string]*Session{}, conns: map[*Session]struct{}{}}
}

// open counts a new connection and runs it on a goroutine of its own,
// unless the shutdown has begun (false: the caller closes it).
func (r *registry) open(s *Session, run func()) bool {
	r.mu.Lock()
	if r.closing { // the shutdown's Wait must not race an Add
		r.mu.Unlock()
		return false
	}
	r.conns[s] = struct{}{}
	r.running.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.running.Done()
		run()
	}()
	return true
}

// forget drops a closed connection.
func (r *registry) forget(s *Session) {
	r.mu.Lock()
	delete(r.conns, s)
	r.mu.Unlock()
}

// isClosing reports whether the shutdown has begun.
func (r *registry) isClosing() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closing
}

// claim makes s its player's session unless a newer one holds it
// (fencing tokens grow with every claim). It returns the session s
// replaces, if any, and whether s is the player's session now.
func (r *registry) claim(s *Session) (old *Session, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old = r.sessions[s.player]
	if old != nil && old.fence.Load() > s.fence.Load() {
		return old, false
	}
	r.sessions[s.player] = s
	return old, true
}

// leave drops s as its player's session (if it still is).
func (r *registry) leave(s *Session) {
	r.mu.Lock()
	if r.sessions[s.player] == s {
		delete(r.sessions, s.player)
	}
	r.mu.Unlock()
}

// session is the player's session here, or nil.
func (r *registry) session(player string) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[player]
}

// online is the number of players with a session here.
func (r *registry) online() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}

// players returns the sessions for which keep is true (all: nil).
func (r *registry) players(keep func(*Session) bool) []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Session
	for _, s := range r.sessions {
		if keep == nil || keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// silent returns the connections that have sent nothing since cutoff
// (Unix seconds).
func (r *registry) silent(cutoff int64) []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Session
	for s := range r.conns {
		if s.lastSeen.Load() < cutoff {
			out = append(out, s)
		}
	}
	return out
}

// close refuses new connections from now on and returns those open.
func (r *registry) close() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closing = true
	out := make([]*Session, 0, len(r.conns))
	for s := range r.conns {
		out = append(out, s)
	}
	return out
}

// wait returns once every connection's goroutine has ended.
func (r *registry) wait() { r.running.Wait() }
