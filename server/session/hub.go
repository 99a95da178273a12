// Package session runs one goroutine-driven session per WebSocket
// connection: it reads the player's requests, and while a ticket is in play
// a second goroutine streams the reveal as timed messages. All state that
// matters lives in Redis (the wallet); a session only holds what is on
// screen, so any server can resume any game.
package session

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"keno/engine"
	"keno/protocol"
	"keno/server/auth"
	"keno/server/clientip"
	"keno/server/metrics"
	"keno/server/ratelimit"
	"keno/server/wallet"
)

// Config is the session behaviour.
type Config struct {
	ColorInterval   time.Duration // step 1: between coloured balls
	NumberInterval  time.Duration // step 2: between numbers
	SoCInterval     time.Duration // between the 3 Stop-or-Continue numbers
	ResultHold      time.Duration // a settled game stays on screen this long before the ticket's next game starts
	Grace           time.Duration // a disconnected player's game waits this long, then settles itself
	LeaseTTL        time.Duration // ownership lease; renewed while the player is active
	IdleTimeout     time.Duration // no message (not even a ping) for this long: the connection is dead
	DecisionTimeout time.Duration // a connected player who does not choose gets the default
	MsgRate         float64       // messages per second per connection
	MsgBurst        int
	AbuseLimit      int // refusals in a row before the connection is closed
	DevMode         bool
	NotDurable      bool // dev only: Redis does not keep the durability contract; clients are told
	SweepEvery      time.Duration
	MaxInPlay       int               // the operator's ceiling on games in play on this server (0: none; admission.go)
	ClientIP        clientip.Resolver // who a connection is from (per-IP limits)
	// OriginPatterns: host patterns of other sites' pages allowed to open
	// game sockets; none: only pages of the game's own origin (and
	// clients that send no Origin, which are not browsers).
	OriginPatterns []string
}

// HumanConfig paces the reveal for people.
func HumanConfig() Config {
	return Config{
		ColorInterval: 150 * time.Millisecond, NumberInterval: 400 * time.Millisecond, SoCInterval: 500 * time.Millisecond,
		ResultHold: 3 * time.Second,
		Grace:      60 * time.Second, LeaseTTL: 30 * time.Second, IdleTimeout: 60 * time.Second,
		DecisionTimeout: 10 * time.Minute,
		MsgRate:         20, MsgBurst: 40, AbuseLimit: 50, SweepEvery: time.Second,
	}
}

// FastConfig is the profile for tests and load runs: the same sequence
// of timed messages, a few milliseconds apart.
func FastConfig() Config {
	c := HumanConfig()
	c.ColorInterval, c.NumberInterval, c.SoCInterval = 2*time.Millisecond, 4*time.Millisecond, 4*time.Millisecond
	c.ResultHold = 0
	return c
}

// Hub is one server's set of sessions and what they share.
type Hub struct {
	cfg     Config
	table   *engine.Table
	store   *wallet.Store
	signer  *auth.Signer
	limiter *ratelimit.Limiter
	metrics *metrics.Metrics
	log     zerolog.Logger
	Events  *Events // live feed for the ops page

	mu          sync.Mutex
	sessions    map[string]*Session    // by player, once authenticated
	conns       map[*Session]struct{}  // every open connection, for the reaper
	closing     bool                   // Shutdown has begun: no new connection
	noTicket    atomic.Bool            // no new ticket: the server is going away
	maintenance atomic.Pointer[string] // the operator's maintenance message (control.go)
	wg          sync.WaitGroup         // running sessions
	connSeq     atomic.Int64           // numbers connections, to spread lease renewals
	settledQ    chan wallet.DueGame    // settled games to drop from the recovery index
	warm        *warmPool              // runs requests and games (warm.go)
	admit       *admission             // refuses new tickets busy while games in play run late (admission.go)
}

// NewHub assembles a hub.
func NewHub(cfg Config, table *engine.Table, store *wallet.Store, signer *auth.Signer, limiter *ratelimit.Limiter, m *metrics.Metrics, log zerolog.Logger) *Hub {
	h := &Hub{cfg: cfg, table: table, store: store, signer: signer, limiter: limiter, metrics: m, log: log,
		sessions: map[string]*Session{}, conns: map[*Session]struct{}{}, Events: newEvents(),
		settledQ: make(chan wallet.DueGame, 8192), warm: newWarmPool(2 * time.Second)}
	h.admit = newAdmission(cfg.MaxInPlay, func(limit, inPlay int64) {
		m.AdmitLimit.Set(float64(limit))
		if limit == math.MaxInt64 {
			m.AdmitLimit.Set(math.Inf(1))
		}
		m.GamesInPlay.Set(float64(inPlay))
	})
	return h
}

// Run runs the hub's background loops until ctx ends, and returns when
// every one of them has (the last flush of the recovery queue included):
// no goroutine of the hub outlives it. Sessions are not among them: each
// belongs to its connection, and Shutdown ends them.
func (h *Hub) Run(ctx context.Context) error {
	var g errgroup.Group
	for _, loop := range []func(context.Context){
		h.sweep,           // settles abandoned games (recovery.go)
		h.flushUnindex,    // drops settled games from the recovery index (recovery.go)
		h.keepLeases,      // renews the local sessions' ownership leases
		h.listenTakeovers, // ends sessions whose player connected elsewhere
		h.watchControls,   // applies the operator's orders (control.go)
		h.reap,            // closes silent connections
		h.admit.adjust,    // sets how many games may be in play (admission.go)
	} {
		g.Go(func() error { loop(ctx); return nil })
	}
	return g.Wait()
}

// Every runs fn every d until ctx ends (the first run after d).
func Every(ctx context.Context, d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// Config returns the session configuration.
func (h *Hub) Config() Config { return h.cfg }

// ServeHTTP upgrades /ws requests to a session.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	closing := h.closing
	h.mu.Unlock()
	if closing {
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return
	}
	ip := h.cfg.ClientIP.Of(r)
	if ok, retry, err := h.limiter.Allow(r.Context(), ratelimit.ConnectIP(ip), h.limiter.Rules.ConnectsPerIP); err == nil && !ok {
		h.metrics.Connects.WithLabelValues("rate_limited").Inc()
		w.Header().Set("Retry-After", retryAfter(retry))
		http.Error(w, "too many connection attempts", http.StatusTooManyRequests)
		return
	}
	sb := &smallBuffers{ResponseWriter: w}
	conn, err := websocket.Accept(sb, r, &websocket.AcceptOptions{
		CompressionMode: websocket.CompressionDisabled, // small frames; compression costs memory per connection
		OriginPatterns:  h.cfg.OriginPatterns,          // other origins get 403
	})
	if err != nil {
		return
	}
	conn.SetReadLimit(protocol.MaxFrame)
	// The session runs in a goroutine of its own and this handler returns:
	// net/http's connection goroutine, its deep stack and the upgrade
	// request are then freed, which keeps an idle player's footprint small.
	s := newSession(h, conn, sb.w, ip)
	h.mu.Lock()
	if h.closing { // shutdown began during the upgrade: its Wait must not race an Add
		h.mu.Unlock()
		conn.Close(websocket.StatusGoingAway, "server shutting down")
		s.cancel()
		return
	}
	h.conns[s] = struct{}{}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		s.run()
	}()
}

// smallBuffers hands the WebSocket library smaller read and write buffers
// than net/http's 4 KiB each: frames here are a few hundred bytes, and an
// idle player's memory is mostly buffers. Bytes the client sent right
// after the upgrade request are carried over. Writes go through the
// connection's writer, which batches messages due together.
type smallBuffers struct {
	http.ResponseWriter
	w *writer
}

const (
	readBuffer  = 1 << 10
	writeBuffer = 2 << 10
)

func (w *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	pending, _ := brw.Reader.Peek(brw.Reader.Buffered())
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(pending)), conn), max(readBuffer, len(pending)))
	if _, err := r.Peek(len(pending)); err != nil {
		return nil, nil, err
	}
	w.w = &writer{conn: conn}
	return w.w, bufio.NewReadWriter(r, bufio.NewWriterSize(w.w, writeBuffer)), nil
}

func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// register makes s the player's session on this server and tells every
// other server (and this one) that older sessions are over. Fencing tokens
// grow with every claim, so the newest connection is the one with the
// largest: of two connections racing, the older one is taken over, in
// whichever order they get here — and never both. It returns false when s
// itself was the older one.
func (h *Hub) register(s *Session) bool {
	h.mu.Lock()
	old := h.sessions[s.player]
	if old != nil && old.fence.Load() > s.fence.Load() {
		h.mu.Unlock()
		s.takenOver()
		return false
	}
	h.sessions[s.player] = s
	h.mu.Unlock()
	if old != nil && old != s {
		old.takenOver()
	}
	h.metrics.Sessions.Inc()
	h.store.Publish(context.Background(), wallet.TakeoverChannel, []byte(s.player+"|"+s.fenceToken()))
	return true
}

func (h *Hub) unregister(s *Session) {
	h.mu.Lock()
	if h.sessions[s.player] == s {
		delete(h.sessions, s.player)
	}
	h.mu.Unlock()
	h.metrics.Sessions.Dec()
}

// Online is the number of players connected here.
func (h *Hub) Online() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

func (h *Hub) forget(s *Session) {
	h.mu.Lock()
	delete(h.conns, s)
	h.mu.Unlock()
}

// reap closes connections silent for longer than IdleTimeout (dead peers
// that never sent a close), every IdleTimeout/4, until ctx ends.
func (h *Hub) reap(ctx context.Context) {
	Every(ctx, max(h.cfg.IdleTimeout/4, time.Second), func() {
		cutoff := time.Now().Add(-h.cfg.IdleTimeout).Unix()
		var dead []*Session
		h.mu.Lock()
		for s := range h.conns {
			if s.lastSeen.Load() < cutoff {
				dead = append(dead, s)
			}
		}
		h.mu.Unlock()
		// A silent peer is gone: it will not answer a close handshake, so
		// its connections are dropped at once, all of them together.
		for _, s := range dead {
			s.cancel() // closes the connection (see newSession)
		}
	})
}

// keepLeases renews the ownership lease of every local session until ctx
// ends. Sessions are spread over leaseSlots slots renewed in turn, so that
// Redis sees a steady trickle of small pipelines rather than one burst of
// every player at once. A session whose lease was taken (its player
// connected elsewhere, or it stalled past the TTL) is ended.
func (h *Hub) keepLeases(ctx context.Context) {
	const leaseSlots = 64
	slot := 0
	Every(ctx, h.cfg.LeaseTTL/3/leaseSlots, func() {
		slot = (slot + 1) % leaseSlots
		h.mu.Lock()
		var sessions []*Session
		for _, s := range h.sessions {
			if s.leaseSlot%leaseSlots == slot {
				sessions = append(sessions, s)
			}
		}
		h.mu.Unlock()
		leases := make([]wallet.Lease, len(sessions))
		for i, s := range sessions {
			leases[i] = wallet.Lease{Player: s.player, Token: s.fenceToken()}
		}
		lost, err := h.store.RenewAll(ctx, leases, h.cfg.LeaseTTL)
		if err != nil {
			h.log.Warn().Err(err).Msg("renew leases")
			return
		}
		for _, i := range lost {
			go sessions[i].leaseLost()
		}
	})
}

// listenTakeovers ends local sessions when their player connects to another
// server. It runs until ctx ends.
func (h *Hub) listenTakeovers(ctx context.Context) {
	ch := h.store.Subscribe(ctx, wallet.TakeoverChannel, 1024)
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			player, tok, _ := strings.Cut(m.Payload, "|")
			fence, _ := strconv.ParseInt(tok, 10, 64)
			h.mu.Lock()
			s := h.sessions[player]
			h.mu.Unlock()
			if s != nil && s.fence.Load() < fence { // only a newer claim takes over
				s.takenOver()
			}
		}
	}
}

// StopTickets refuses new tickets from now on (server_draining), and
// makes Draining true: the first step of a shutdown.
func (h *Hub) StopTickets() { h.noTicket.Store(true) }

// Draining reports whether a shutdown has begun.
func (h *Hub) Draining() bool { return h.noTicket.Load() }

// Shutdown stops taking connections, lets every reveal in progress run
// until it waits for the player, tells each client, and closes — all
// sessions in parallel, and all within ctx: when it ends, whatever is
// left is dropped at once, whatever the peers do. Open games go to the
// recovery path (resumed on reconnection, or settled by any server after
// the grace period).
func (h *Hub) Shutdown(ctx context.Context) {
	h.StopTickets()
	h.mu.Lock()
	h.closing = true
	conns := make([]*Session, 0, len(h.conns))
	for s := range h.conns {
		conns = append(conns, s)
	}
	h.mu.Unlock()
	for _, s := range conns {
		go s.drain(ctx)
	}
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, s := range conns {
			s.drop()
		}
		<-done
	}
}

func newID() string {
	var b [9]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
