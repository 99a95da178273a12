package app

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/engine"
	"keno/protocol"
	"keno/server/redistest"
	"keno/server/session"
)

// testServer is a real server on a loopback port over a real redis-server.
type testServer struct {
	t     *testing.T
	app   *App
	url   string // ws://…/ws
	base  string // http://… (the public listener)
	admin string // http://… (the admin listener)
	redis *redistest.Server
	stop  context.CancelFunc
	done  chan struct{}
	// ahead moves the wallet's clock forward (ns): set while the server
	// runs, it is read by the archiver's goroutine, so it is atomic.
	ahead atomic.Int64
}

type option func(*Config)

func withGrace(d time.Duration) option { return func(c *Config) { c.Grace, c.Session.Grace = d, d } }

func startServer(t *testing.T, rs *redistest.Server, opts ...option) *testServer {
	t.Helper()
	if rs == nil {
		rs = redistest.Start(t)
	}
	cfg, err := ParseConfig([]string{"-mode", "dev", "-profile", "fast", "-log", "json", "-log-level", "error", "-redis", rs.URL()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Session.SweepEvery = 100 * time.Millisecond
	cfg.DrainTimeout = 3 * time.Second
	for _, o := range opts {
		o(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	al, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ts := &testServer{t: t, app: a, url: "ws://" + l.Addr().String() + "/ws", base: "http://" + l.Addr().String(),
		admin: "http://" + al.Addr().String(), redis: rs, stop: stop, done: make(chan struct{})}
	a.Store.Now = func() time.Time { return time.Now().Add(time.Duration(ts.ahead.Load())) }
	go func() { a.Run(ctx, l, al); close(ts.done) }()
	t.Cleanup(ts.shutdown)
	return ts
}

func (ts *testServer) shutdown() {
	ts.stop()
	<-ts.done
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// player makes a funded player and returns a connected client.
func (ts *testServer) player(name string, deposit int64) *protocol.Client {
	ts.t.Helper()
	return ts.playerIn(1, name, deposit)
}

// playerIn makes a funded player connected in protocol version v.
func (ts *testServer) playerIn(v int, name string, deposit int64) *protocol.Client {
	ts.t.Helper()
	if deposit > 0 {
		if _, err := ts.app.Store.Deposit(context.Background(), name, "seed-"+name, deposit); err != nil {
			ts.t.Fatal(err)
		}
	}
	return ts.connectIn(v, name)
}

func (ts *testServer) connect(name string) *protocol.Client {
	ts.t.Helper()
	return ts.connectIn(1, name)
}

// connectIn connects the player in protocol version v.
func (ts *testServer) connectIn(v int, name string) *protocol.Client {
	ts.t.Helper()
	c, err := protocol.ConnectVersion(ctxT(ts.t), ts.url, ts.app.Signer.Issue(name, time.Now().Add(time.Hour)), v)
	if err != nil {
		ts.t.Fatalf("connect %s: %v", name, err)
	}
	ts.t.Cleanup(func() { c.Close() })
	return c
}

func (ts *testServer) balance(player string) int64 {
	a, err := ts.app.Store.Account(context.Background(), player)
	if err != nil {
		ts.t.Fatal(err)
	}
	return a.Balance
}

func (ts *testServer) checkBooks() {
	ts.t.Helper()
	b, err := ts.app.Store.Books(context.Background())
	if err != nil {
		ts.t.Fatal(err)
	}
	if !b.Balanced() {
		ts.t.Fatalf("books do not balance: %+v", b)
	}
}

// forceNext arranges, through the provably fair inputs only, that the
// player's next game with these picks and stake satisfies want: it fixes a
// known server seed and moves the nonce to the first one that deals such
// a game. The server then deals it through its normal path.
func forceNext(t *testing.T, rdb redis.UniversalClient, player string, picks []int, stake int64, want func(o *engine.Outcome, m engine.Main) bool) engine.Outcome {
	t.Helper()
	seed := []byte("test seed for " + player)
	p, _ := engine.ValidatePicks(picks)
	tab := engine.Default()
	for nonce := uint64(1); nonce < 5_000_000; nonce++ {
		o, _ := tab.Deal(engine.NewFairSource(seed, "", nonce), p, stake)
		if want(&o, tab.Evaluate(&o)) {
			key := fmt.Sprintf("{p:%s}:fair", player)
			if err := rdb.HSet(context.Background(), key, "seed", hex.EncodeToString(seed), "nonce", nonce-1, "client", "").Err(); err != nil {
				t.Fatal(err)
			}
			return o
		}
	}
	t.Fatal("no nonce deals the wanted game")
	return engine.Outcome{}
}

func grid(stake int64, picks ...int) protocol.Grid { return protocol.Grid{Picks: picks, Stake: stake} }

func always(b bool) func(*engine.Main) bool { return func(*engine.Main) bool { return b } }

// colorAt reports whether colour c sits on a matched position.
func colorOnHit(o *engine.Outcome, m engine.Main, c engine.Color) (int, bool) {
	for i, col := range o.Colors {
		if col == c && m.Hits[i] {
			return i, true
		}
	}
	return -1, false
}

func errCode(err error) string {
	if e, ok := err.(*protocol.Error); ok {
		return e.Code
	}
	if err == nil {
		return ""
	}
	return "non-protocol: " + err.Error()
}

var _ = strings.Contains
var _ = session.BigWinFactor
