package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/rs/zerolog"

	"keno/engine"
	"keno/protocol"
	"keno/server/auth"
	"keno/server/ratelimit"
	"keno/server/wallet"
)

// Session is one connected player. Its goroutine reads and answers
// requests; a ticket in play runs in a second goroutine (game.go).
type Session struct {
	hub    *Hub
	conn   *websocket.Conn
	w      *writer // under conn: owns the socket's writes and batches them (writer.go)
	ip     string
	ctx    context.Context
	cancel context.CancelFunc
	local  *ratelimit.Local

	// Set once by hello, read-only afterwards.
	sid     string // the token's session id (the operator may revoke it)
	player  string
	version int

	// The ownership lease's fencing token (wallet.Claim): set by hello,
	// renewed by a reclaim after a lapsed lease (leaseLost).
	fence      atomic.Int64
	reclaiming atomic.Bool // leaseLost is running

	fair      *fairInputs  // the player's provably fair inputs for the next ticket; nil: read them (request goroutine)
	refusals  int          // consecutive refused messages (sustained abuse closes)
	leaseSlot int          // which round of the lease keeper renews this one
	lastSeen  atomic.Int64 // Unix seconds of the last frame received

	mu       sync.Mutex
	pending  *pendingTicket // built, summarised, awaiting confirm
	last     []gridSpec     // the last confirmed ticket, for "replay last"
	playing  chan struct{}  // closed when the ticket in play ends; nil when idle
	await    *awaiting      // the decision the game waits for, if any
	paused   bool           // the game waits for a choice and its offer has been sent
	replaced bool           // taken over by a newer session
}

// fairInputs are what the next ticket is dealt from: the server seed, the
// client seed and the next nonce, as last read or advanced by a bet. The
// bet script checks them (wallet.FairMoved when they moved).
type fairInputs struct {
	seed   []byte
	client string
	next   uint64
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

	unsure bool // a confirmation went unanswered: the bet may have landed
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
	s.hub.forget(s)
	s.mu.Lock()
	playing := s.playing
	replaced := s.replaced
	pending := s.pending
	s.mu.Unlock()
	if pending != nil {
		s.dropIndex(pending)
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
				s.hub.store.IndexOpen(ctx, s.player, ids, time.Now().Add(s.hub.cfg.Grace))
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

// leaseLost handles a lease that could not be renewed. A takeover by
// another connection is announced (ListenTakeovers), so this is a lapse —
// Redis was unreachable or restarted — and nobody else plays for the
// player: the session claims the lease again and goes on. If someone does
// own it now, the session cannot go on safely; the player is told that the
// server had a problem and to reconnect, which is not a takeover.
func (s *Session) leaseLost() {
	if !s.reclaiming.CompareAndSwap(false, true) {
		return // the keeper's next round found it lost again: one reclaim at a time
	}
	defer s.reclaiming.Store(false)
	s.mu.Lock()
	gone := s.replaced
	s.mu.Unlock()
	if gone || s.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	tok, err := s.hub.store.ClaimIfFree(ctx, s.player, s.hub.cfg.LeaseTTL)
	if err == nil && tok != "" {
		s.setFence(tok)
		s.log().Warn().Msg("lease had lapsed; claimed again")
		return
	}
	s.log().Warn().Err(err).Msg("lease lost to another owner; closing the session")
	s.mu.Lock()
	s.replaced = true // the lease is not ours: cleanup must not release it
	s.mu.Unlock()
	s.end(&protocol.Message{Type: protocol.TError, Error: protocol.Errf(protocol.CodeServerProblem,
		"The connection to your game was interrupted by a problem on our side. Reconnect: your games are safe and resume where they were.")},
		websocket.StatusTryAgainLater, "lease lost")
}

func (s *Session) setFence(tok string) {
	n, _ := strconv.ParseInt(tok, 10, 64)
	s.fence.Store(n)
}

func (s *Session) fenceToken() string { return strconv.FormatInt(s.fence.Load(), 10) }

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

// failErr turns an internal error into the client's typed error.
func (s *Session) failErr(id string, err error) {
	var pe *protocol.Error
	var we *wallet.Error
	switch {
	case errors.As(err, &pe):
		s.fail(id, pe)
	case errors.As(err, &we):
		if we.Code == "record_damaged" {
			s.log().Error().Err(err).Str("request_id", id).Msg("a stored record does not match its seal: run keno-server verify")
		}
		e := walletError(we)
		if e.Code == protocol.CodeTakenOver {
			s.takenOver()
			return
		}
		s.hub.metrics.Refusals.WithLabelValues(e.Code, e.Reason).Inc()
		s.fail(id, e)
	default:
		s.log().Error().Err(err).Str("request_id", id).Msg("request failed")
		s.fail(id, protocol.Errf(protocol.CodeInternal, "something went wrong on our side; nothing was debited twice — try again"))
	}
}

// walletError explains a wallet refusal to a player.
func walletError(we *wallet.Error) *protocol.Error {
	e := &protocol.Error{Code: we.Code, Reason: we.Reason, Limit: we.Limit, Available: we.Available}
	switch we.Code {
	case "insufficient_funds":
		e.Message = fmt.Sprintf("Your balance (%s) is too low for this ticket. Make a deposit (within your weekly cap) or play a smaller ticket.", engine.Euros(we.Available))
	case "limit_reached":
		switch we.Reason {
		case "deposit_cap":
			e.Message = fmt.Sprintf("This deposit would pass your weekly deposit cap of %s; %s is left this week.", engine.Euros(we.Limit), engine.Euros(we.Available))
		case "loss_limit":
			e.Message = fmt.Sprintf("This ticket would pass your daily loss limit of %s; %s is left today.", engine.Euros(we.Limit), engine.Euros(we.Available))
		case "ticket_max":
			e.Message = fmt.Sprintf("A ticket may not exceed %s.", engine.Euros(we.Limit))
		case "self_excluded":
			e.Message = "You have excluded yourself from play until " + time.UnixMilli(we.Limit).UTC().Format("2006-01-02 15:04 UTC") + "."
		default:
			e.Message = "A limit was reached."
		}
	case "rate_limited":
		e.Message = "Too many bets: wait a moment."
		e.RetryMS = we.Retry.Milliseconds() + 1
	case "fenced":
		e.Code, e.Message = protocol.CodeTakenOver, "This session was taken over by a newer one."
	case "no_game":
		e.Code, e.Message = protocol.CodeNoSuchGame, "No such game."
	case "record_damaged":
		e.Code, e.Message = protocol.CodeInternal, "This game's stored record failed its integrity check and cannot be shown; it has been reported to the operator."
	case "op_conflict":
		e.Message = "This operation id was already used for a different request; nothing was done."
	case "exclusion_in_force":
		e.Message = "You have excluded yourself from play until " + time.UnixMilli(we.Limit).UTC().Format("2006-01-02 15:04 UTC") +
			"; a self-exclusion can be neither shortened nor extended while it runs."
	case "bad_amount", "bad_request":
		e.Message = "Invalid request."
		if we.Reason != "" {
			e.Message = "Invalid request: " + we.Reason + "."
		}
		e.Reason = ""
	default:
		e.Code, e.Message = protocol.CodeInternal, we.Error()
	}
	return e
}

func (s *Session) hello(ctx context.Context, req *protocol.Request) error {
	if s.player != "" {
		return protocol.Errf(protocol.CodeBadRequest, "already authenticated")
	}
	claims, err := s.hub.signer.VerifyClaims(req.Token, time.Now())
	if err == nil && claims.Session != "" {
		if revoked, rerr := s.hub.store.Revoked(ctx, claims.Session); rerr != nil {
			return rerr
		} else if revoked {
			err = auth.ErrRevoked
		}
	}
	if err != nil {
		s.hub.metrics.Connects.WithLabelValues("unauthorized").Inc()
		if errors.Is(err, auth.ErrExpired) {
			return protocol.Errf(protocol.CodeUnauthorized, "your session token has expired: log in again")
		}
		return protocol.Errf(protocol.CodeUnauthorized, "invalid token: %v", err)
	}
	player := claims.Player
	s.sid = claims.Session
	if !wallet.ValidPlayer(player) {
		return protocol.Errf(protocol.CodeUnauthorized, "invalid player id in token")
	}
	s.version = negotiate(req.Versions)
	if s.version == 0 {
		s.fail(req.ID, protocol.Errf(protocol.CodeUnsupported, "this server speaks protocol versions %v", protocol.Versions))
		s.conn.Close(websocket.StatusPolicyViolation, "unsupported protocol version")
		return nil
	}
	if blocked, err := s.hub.store.Blocked(ctx, player); err != nil {
		return err
	} else if blocked {
		s.hub.metrics.Connects.WithLabelValues("blocked").Inc()
		s.fail(req.ID, protocol.Errf(protocol.CodeBlocked, "this account is blocked by the operator: contact customer service"))
		s.conn.Close(websocket.StatusCode(4003), "account blocked")
		return nil
	}
	if ok, retry, err := s.hub.limiter.Allow(ctx, ratelimit.ConnectPlayer(player), s.hub.limiter.Rules.ConnectsPerPID); err == nil && !ok {
		s.hub.metrics.Connects.WithLabelValues("rate_limited").Inc()
		e := protocol.Errf(protocol.CodeRateLimited, "too many connections for this player: wait a moment")
		e.RetryMS = retry.Milliseconds()
		return e
	}
	var fence string
	if err := retryTransient(ctx, func() (err error) {
		fence, err = s.hub.store.Claim(ctx, player, s.hub.cfg.LeaseTTL)
		return err
	}); err != nil {
		return err
	}
	s.player = player
	s.setFence(fence)
	if !s.hub.register(s) {
		return nil // a newer connection of the player won the race: this one is closing
	}
	s.hub.metrics.Connects.WithLabelValues("ok").Inc()

	// Three independent reads at once. The open games are looked up before
	// the welcome, which lists them: a client that comes back knows at once
	// which games it will see again, and that any other it awaited was
	// settled meanwhile.
	var (
		wg                         sync.WaitGroup
		acct                       wallet.Account
		lim                        wallet.Limits
		fair                       wallet.FairState
		open                       []*wallet.GameState
		standErr, fairErr, openErr error
	)
	s.hub.warm.Join(&wg, func() { acct, lim, standErr = s.hub.store.Standing(ctx, player) })
	s.hub.warm.Join(&wg, func() { fair, fairErr = s.loadFair(ctx) })
	s.hub.warm.Join(&wg, func() { open, openErr = s.hub.store.OpenGames(ctx, player) })
	wg.Wait()
	if err := errors.Join(standErr, fairErr, openErr); err != nil {
		return err
	}
	var refs []protocol.GameRef
	for _, g := range open {
		refs = append(refs, protocol.GameRef{Game: g.ID, Index: g.Index, Nonce: g.Fair.Nonce, Commit: g.Fair.Commit})
	}
	cfg := s.hub.cfg
	t := s.hub.table
	s.reply(req.ID, &protocol.Message{Type: protocol.TWelcome, Version: s.version, Player: player,
		Balance: &acct.Balance, Limits: limitsInfo(lim),
		Fair: &protocol.FairInfo{Commit: fair.Commit, ClientSeed: fair.ClientSeed, NextNonce: fair.NextNonce},
		Config: &protocol.GameConfig{Stakes: t.Stakes, DefaultStake: t.DefaultStake, MinPicks: engine.MinPicks,
			MaxPicks: engine.MaxPicks, Grid: engine.GridSize, MaxGrids: protocol.MaxGrids, TicketMax: s.hub.store.Config().TicketMax,
			ColorMS: cfg.ColorInterval.Milliseconds(), NumberMS: cfg.NumberInterval.Milliseconds(), HoldMS: cfg.ResultHold.Milliseconds(), DevMode: cfg.DevMode,
			NotDurable: cfg.NotDurable, LimitRaiseMS: s.hub.store.Config().RaiseDelay.Milliseconds()},
		Games: refs})
	if len(open) == 0 {
		return nil
	}
	s.hub.metrics.Resumed.Add(float64(len(open)))
	s.send(&protocol.Message{Type: protocol.TResume, Games: refs})
	s.play(open, true)
	return nil
}

func negotiate(offered []int) int {
	if len(offered) == 0 {
		return protocol.Version
	}
	for _, v := range protocol.Versions {
		for _, o := range offered {
			if o == v {
				return v
			}
		}
	}
	return 0
}

// ping answers heartbeats (which keep the connection from being reaped).
func (s *Session) ping(id string) {
	s.reply(id, &protocol.Message{Type: protocol.TPong})
}
