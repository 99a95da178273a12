package session

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/rs/zerolog"

	"keno/engine"
	"keno/protocol"
	"keno/server/ratelimit"
	"keno/server/wallet"
)

// Session is one connected player. Each field says which goroutine owns
// it (see doc.go): the reader (run), the game (play), or — under mu or
// atomic — shared.
type Session struct {
	// Set at the upgrade, read-only afterwards.
	hub    *Hub
	conn   *websocket.Conn
	w      *writer // under conn: owns the socket's writes and batches them (writer.go)
	ip     string
	ctx    context.Context // ends when the session does; cancel closes the connection
	cancel context.CancelFunc

	// Set once by hello (the reader), read-only afterwards.
	sid       string // the token's session id (the operator may revoke it)
	player    string
	version   int
	leaseSlot int // which round of the lease keeper renews this one

	// The reader's alone (requests are handled one at a time).
	local      *ratelimit.Local
	fair       *wallet.FairInputs // what the next ticket is dealt from, as last read or advanced by a bet (checked by the bet); nil: read them
	refusals   int                // consecutive refused messages (sustained abuse closes)
	busyStreak uint               // tickets refused busy in a row (each asked to wait longer)

	// Shared, atomic.
	fence      atomic.Int64 // the lease's fencing token (wallet.Claim): hello, or a reclaim (leaseLost)
	reclaiming atomic.Bool  // leaseLost is running
	lastSeen   atomic.Int64 // Unix seconds of the last frame received (written by the reader, read by the reaper)
	extended   atomic.Int64 // Unix ms when a bet, choice or settlement last extended the lease (leases.go)

	// Shared, under mu: the reader, the game goroutine, the hub's loops.
	mu       sync.Mutex
	pending  *pendingTicket // built, summarised, awaiting confirm
	last     []gridSpec     // the last confirmed ticket, for "replay last"
	playing  chan struct{}  // closed when the ticket in play ends; nil when idle
	await    *awaiting      // the decision the game waits for, if any
	paused   bool           // the game waits for a choice and its offer is on screen (sent, in version 1)
	replaced bool           // taken over by a newer session
}

// gridSpec is one grid ready to deal.
type gridSpec struct {
	picks engine.Picks
	stake int64
	quick bool
}

// pendingTicket is used by the request handlers only, which run one at a
// time.
type pendingTicket struct {
	id    string
	grids []gridSpec
	ids   []string // its games', indexed for recovery at once

	unsure   bool      // a confirmation went unanswered: the bet may have landed
	intended time.Time // the bank prepared its payment, until then (Bank.Prepare)
}

// log is the hub's logger with this connection's id and its player: every
// line of a session can be found together (made when needed: idle players
// cost nothing).
func (s *Session) log() *zerolog.Logger {
	l := s.hub.log.With().Int("session", s.leaseSlot).Str("player", s.player).Logger()
	return &l
}

func newSession(h *Hub, conn *websocket.Conn, w *writer, ip string) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{hub: h, conn: conn, w: w, ip: ip, ctx: ctx, cancel: cancel,
		local: ratelimit.NewLocal(h.cfg.MsgRate, h.cfg.MsgBurst)}
	w.failed(cancel)
	s.lastSeen.Store(time.Now().Unix())
	s.leaseSlot = int(h.connSeq.Add(1))
	// Reads take no context (a cancellable one costs an AfterFunc per read);
	// this one closes the connection when the session ends, which ends them.
	context.AfterFunc(ctx, func() { conn.CloseNow() })
	return s
}

// run is the session's goroutine: it returns when the connection ends.
func (s *Session) run() {
	defer s.cleanup()
	for {
		frame, err := s.read()
		if err != nil {
			return
		}
		if !utf8.Valid(*frame) {
			// RFC 6455 §8.1: a text frame that is not UTF-8 fails the connection.
			buffers.put(frame)
			s.conn.Close(websocket.StatusInvalidFramePayloadData, "text frame is not valid UTF-8")
			return
		}
		if ok, wait := s.local.Allow(time.Now()); !ok {
			e := protocol.Errf(protocol.CodeRateLimited, "too many messages: slow down")
			e.RetryMS = wait.Milliseconds() + 1
			s.refuse(protocol.IDOf(*frame), e)
			buffers.put(frame)
			continue
		}
		req, perr := protocol.Decode(*frame)
		buffers.put(frame) // decoding copied what it keeps
		if perr != nil {
			s.refuse(req.ID, perr)
			continue
		}
		if s.player == "" && req.Type != protocol.THello {
			s.refuse(req.ID, protocol.Errf(protocol.CodeUnauthorized, "send hello with your token first"))
			continue
		}
		// Handled on another goroutine, in turn: the deep stack that Redis
		// calls need stays with the pool's goroutines, and this reader,
		// which idles for most of a player's life, keeps a small one.
		done := make(chan struct{})
		s.hub.warm.Go(func() {
			defer close(done)
			s.handle(req)
		})
		<-done
	}
}

// read waits for the next text frame and returns it in a lent buffer, to
// give back once decoded. Silence beyond IdleTimeout ends the connection
// (clients ping after 15 s of silence): the hub's reaper checks lastSeen,
// which costs an idle player nothing, where a timer per read would.
func (s *Session) read() (*[]byte, error) {
	for {
		typ, r, err := s.conn.Reader(context.Background()) // see newSession
		if err != nil {
			return nil, err
		}
		frame := buffers.get() // only once a frame has come: an idle reader holds none
		buf := bytes.NewBuffer(*frame)
		_, err = buf.ReadFrom(r)
		*frame = buf.Bytes()
		if err != nil {
			buffers.put(frame)
			return nil, err
		}
		s.lastSeen.Store(time.Now().Unix())
		if typ == websocket.MessageText {
			return frame, nil
		}
		buffers.put(frame)
		s.refuse("", protocol.Errf(protocol.CodeBadRequest, "binary frames are not part of the protocol"))
	}
}

func (s *Session) cleanup() {
	s.cancel()
	s.hub.reg.forget(s)
	s.mu.Lock()
	playing := s.playing
	replaced := s.replaced
	pending := s.pending
	s.mu.Unlock()
	if pending != nil {
		s.abandon(pending)
	}
	if playing != nil {
		<-playing
	}
	if s.player != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if !replaced {
			// Hand unfinished games to the recovery path: resumed if the
			// player comes back within the grace period, settled otherwise.
			if open, err := s.hub.store.OpenGames(ctx, s.player); err == nil && len(open) > 0 {
				ids := make([]string, len(open))
				for i, g := range open {
					ids[i] = g.ID
				}
				s.hub.store.Recovery().HandOver(ctx, s.player, ids, time.Now().Add(s.hub.cfg.Grace))
			}
			s.hub.store.Release(ctx, s.player, s.fenceToken())
		}
		s.hub.unregister(s)
	}
	s.conn.Close(websocket.StatusNormalClosure, "")
}

// send writes one message. It never waits for the peer: the writer queues
// it (writer.go), which is why there is no timer or context per write
// (each would cost an allocation per message, and the reveal is most of
// the traffic). A client that stops reading is closed by the writer once
// too much is queued, or by the reaper once it falls silent.
func (s *Session) send(m *protocol.Message) bool {
	buf := buffers.get()
	defer buffers.put(buf)
	b, err := protocol.AppendEncode((*buf)[:0], m)
	*buf = b
	if err != nil {
		s.log().Error().Err(err).Msg("encode message")
		return false
	}
	if err := s.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		s.cancel()
		return false
	}
	return true
}

// buffers lends the frames read and the messages encoded (the library
// copies a message into its own buffer, so that one goes back at once).
var buffers = newBufferPool(512)

// reply answers request id with m.
func (s *Session) reply(id string, m *protocol.Message) {
	m.ID = id
	s.refusals = 0
	s.send(m)
}

// fail answers request id with an error.
func (s *Session) fail(id string, e *protocol.Error) {
	s.hub.metrics.Errors.WithLabelValues(e.Code).Inc()
	s.send(protocol.Fail(id, e))
}

// refuse answers a bad or unwelcome message; a client that keeps sending
// them is cut off.
func (s *Session) refuse(id string, e *protocol.Error) {
	s.fail(id, e)
	s.refusals++
	if s.refusals >= s.hub.cfg.AbuseLimit {
		s.conn.Close(websocket.StatusPolicyViolation, "too many invalid or excessive messages")
		s.cancel()
	}
}

// takenOver ends this session because the player connected again. It
// does not wait for the old peer (which may be dead): the farewell and
// the close handshake run on their own goroutine.
func (s *Session) takenOver() {
	s.mu.Lock()
	if s.replaced {
		s.mu.Unlock()
		return
	}
	s.replaced = true
	s.mu.Unlock()
	s.hub.metrics.TakenOver.Inc()
	s.end(&protocol.Message{Type: protocol.TTakenOver, Text: "You connected from another window or device; this one is closed."},
		websocket.StatusCode(4001), "session taken over")
}

// drop ends the connection at once, even while a close handshake is
// waiting for the peer (which the library's CloseNow would wait behind):
// the socket itself is closed.
func (s *Session) drop() {
	s.cancel()
	s.w.conn.Close()
}

// end says goodbye with m and closes with code, without making the caller
// wait for the peer's side of the close handshake (up to 5 s).
func (s *Session) end(m *protocol.Message, code websocket.StatusCode, reason string) {
	go func() {
		s.send(m)
		s.conn.Close(code, reason)
		s.cancel()
	}()
}

// drain waits (within ctx) until no reveal is streaming — no game, or the
// game waits for a choice whose offer is out — then closes.
func (s *Session) drain(ctx context.Context) {
	for {
		s.mu.Lock()
		idle := s.playing == nil || s.paused
		s.mu.Unlock()
		if idle || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.send(&protocol.Message{Type: protocol.TShutdown, Text: "The server is restarting; reconnect to resume your game."})
	s.conn.Close(websocket.StatusGoingAway, "server shutdown") // waits for the peer at most until Shutdown's deadline cancels s
	s.cancel()
}

// handle dispatches one valid request.
func (s *Session) handle(req *protocol.Request) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	var err error
	switch req.Type {
	case protocol.THello:
		err = s.hello(ctx, req)
	case protocol.TTicket:
		err = s.ticket(ctx, req)
	case protocol.TConfirm:
		err = s.confirm(ctx, req)
	case protocol.TChoice:
		s.decision(req, "continue", decision{id: req.ID, cont: *req.Continue})
	case protocol.TBox:
		s.decision(req, "box", decision{id: req.ID, box: *req.Box})
	case protocol.TReplay:
		err = s.replay(ctx, req)
	case protocol.TBalance:
		err = s.balance(ctx, req.ID)
	case protocol.THistory:
		err = s.history(ctx, req)
	case protocol.TGame:
		err = s.game(ctx, req)
	case protocol.TDeposit:
		err = s.deposit(ctx, req)
	case protocol.TSetLimit:
		err = s.setLimit(ctx, req)
	case protocol.TClientSeed:
		err = s.clientSeed(ctx, req)
	case protocol.TRotateSeed:
		err = s.rotateSeed(ctx, req)
	case protocol.TPing:
		s.ping(req.ID)
	}
	if err != nil {
		s.failErr(req.ID, err)
	}
}
