package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"keno/engine"
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
	Currency        string            // what the money is in: a token naming another currency is refused
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
	bank    Bank // where the games' money moves: the store, or the operator's wallet
	signer  *auth.Signer
	limiter *ratelimit.Limiter
	metrics *metrics.Metrics
	log     zerolog.Logger
	Events  *Events // live feed for the ops page

	reg         *registry              // connections and sessions (registry.go)
	noTicket    atomic.Bool            // no new ticket: the server is going away
	maintenance atomic.Pointer[string] // the operator's maintenance message (control.go)
	connSeq     atomic.Int64           // numbers connections, to spread lease renewals
	settledQ    chan wallet.DueGame    // settled games to drop from the recovery index
	warm        *warmPool              // runs requests and games (warm.go)
	admit       *admission             // refuses new tickets busy while games in play run late (admission.go)
}

// NewHub assembles a hub.
func NewHub(cfg Config, table *engine.Table, store *wallet.Store, signer *auth.Signer, limiter *ratelimit.Limiter, m *metrics.Metrics, log zerolog.Logger) *Hub {
	h := &Hub{cfg: cfg, table: table, store: store, bank: redisBank{store}, signer: signer, limiter: limiter, metrics: m, log: log,
		reg: newRegistry(), Events: newEvents(),
		settledQ: make(chan wallet.DueGame, 8192), warm: newWarmPool(2 * time.Second)}
	reveal := engine.Drawn * (cfg.ColorInterval + cfg.NumberInterval)
	h.admit = newAdmission(cfg.MaxInPlay, reveal, func(limit, inPlay int64) {
		shown := float64(limit)
		if limit == math.MaxInt64 {
			shown = math.Inf(1) // no limit
		}
		m.AdmitLimit.Set(shown)
		m.GamesInPlay.Set(float64(inPlay))
	})
	return h
}

// UseBank moves the games' money through b (seamless mode) instead of the
// Redis wallet; called before the hub serves anyone.
func (h *Hub) UseBank(b Bank) { h.bank = b }

// Run runs the hub's background loops until ctx ends, and returns when
// every one of them has (the last flush of the recovery queue included):
// no goroutine of the hub outlives it. Sessions are not among them: each
// belongs to its connection, and Shutdown ends them.
func (h *Hub) Run(ctx context.Context) error {
	var g errgroup.Group
	for _, loop := range []func(context.Context){
		h.sweep,           // settles abandoned games (recovery.go)
		h.flushSettled,    // drops settled games from the recovery index (recovery.go)
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

// register makes s the player's session on this server and tells every
// other server (and this one) that older sessions are over. Fencing tokens
// grow with every claim, so the newest connection is the one with the
// largest: of two connections racing, the older one is taken over, in
// whichever order they get here — and never both. It returns false when s
// itself was the older one.
func (h *Hub) register(s *Session) bool {
	old, ok := h.reg.claim(s)
	if !ok {
		s.takenOver()
		return false
	}
	if old != nil && old != s {
		old.takenOver()
	}
	h.metrics.Sessions.Inc()
	h.store.Publish(context.Background(), wallet.TakeoverChannel, []byte(s.player+"|"+s.fenceToken()))
	return true
}

func (h *Hub) unregister(s *Session) {
	h.reg.leave(s)
	h.metrics.Sessions.Dec()
}

// Online is the number of players connected here.
func (h *Hub) Online() int { return h.reg.online() }

// reap closes connections silent for longer than IdleTimeout (dead peers
// that never sent a close), every IdleTimeout/4, until ctx ends.
func (h *Hub) reap(ctx context.Context) {
	Every(ctx, max(h.cfg.IdleTimeout/4, time.Second), func() {
		dead := h.reg.silent(time.Now().Add(-h.cfg.IdleTimeout).Unix())
		// A silent peer is gone: it will not answer a close handshake, so
		// its connections are dropped at once, all of them together.
		for _, s := range dead {
			s.cancel() // closes the connection (see newSession)
		}
	})
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
	conns := h.reg.close()
	for _, s := range conns {
		go s.drain(ctx)
	}
	done := make(chan struct{})
	go func() { h.reg.wait(); close(done) }()
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
