package app

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"keno/engine"
	"keno/protocol"
)

// untilOffer plays a confirmed ticket up to its first offer and returns
// the messages seen.
func untilType(t *testing.T, c *protocol.Client, typ string) []*protocol.Message {
	t.Helper()
	var seen []*protocol.Message
	for {
		m, err := c.Next(ctxT(t))
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		seen = append(seen, m)
		if m.Type == typ {
			return seen
		}
	}
}

func confirm(t *testing.T, c *protocol.Client, grids ...protocol.Grid) *protocol.Message {
	t.Helper()
	sum, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TTicket, Grids: grids})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket})
	if err != nil {
		t.Fatal(err)
	}
	return acc
}

var socAndExtra = func(o *engine.Outcome, m engine.Main) bool { return m.SoC && m.Green }

// A player who drops mid-game and comes back within the grace period
// resumes where they were: what was shown is sent again at once, the
// choices already made stand, and the game is paid once.
func TestReconnectResumes(t *testing.T) {
	ts := startServer(t, nil)
	picks := []int{2, 9, 16, 23, 30, 37}
	c := ts.player("rhea", 5_000)
	o := forceNext(t, ts.app.Redis, "rhea", picks, 200, socAndExtra)
	confirm(t, c, grid(200, picks...))
	untilType(t, c, protocol.TSoCOffer)
	c.CloseNow() // the network drops while Stop-or-Continue is offered

	c = ts.connect("rhea")
	resume, err := c.NextOf(ctxT(t), protocol.TResume)
	if err != nil || len(resume.Games) != 1 {
		t.Fatalf("resume %+v %v", resume, err)
	}
	if w := c.Welcome.Games; len(w) != 1 || w[0] != resume.Games[0] {
		t.Fatalf("the welcome lists %+v, the resume %+v", w, resume.Games)
	}
	start := time.Now()
	seen := untilType(t, c, protocol.TSoCOffer)
	if time.Since(start) > 50*time.Millisecond*10 {
		t.Errorf("the replay of what was shown took %v", time.Since(start))
	}
	colors := 0
	for _, m := range seen {
		if m.Type == protocol.TColor {
			colors++
		}
	}
	if colors != 10 {
		t.Fatalf("resume re-sent %d colours", colors)
	}
	cont := true
	if _, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TChoice, Game: resume.Games[0].Game, Continue: &cont}); err != nil {
		t.Fatal(err)
	}
	untilType(t, c, protocol.TExtraOffer)
	c.CloseNow() // drops again, before opening a box

	c = ts.connect("rhea")
	log, err := c.Follow(ctxT(t), protocol.Strategy{Continue: func(*engine.Main) bool {
		t.Error("Stop-or-Continue offered again after the choice was recorded")
		return false
	}, Box: func() int { return 4 }})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := engine.Default().Settle(&o, engine.Choices{Continue: true, Box: 4})
	g := log.Games[0]
	if len(g.SoC) != 3 || g.Box != 4 || g.Settled.Win != want.Win {
		t.Fatalf("resumed game: soc %v box %d win %d, want %d", g.SoC, g.Box, g.Settled.Win, want.Win)
	}
	if ts.balance("rhea") != 5_000-200+want.Win {
		t.Fatalf("balance %d", ts.balance("rhea"))
	}
	ts.checkBooks()
}

// A second connection of the same player takes over: the first is told
// and closed, the second carries on the game in progress.
func TestTakeover(t *testing.T) {
	ts := startServer(t, nil)
	picks := []int{5, 10, 15, 20, 25, 30}
	c1 := ts.player("tara", 5_000)
	forceNext(t, ts.app.Redis, "tara", picks, 100, socAndExtra)
	confirm(t, c1, grid(100, picks...))
	untilType(t, c1, protocol.TMainResult)

	c2 := ts.connect("tara")
	if m, err := c1.NextOf(ctxT(t), protocol.TTakenOver); err != nil || m.Text == "" {
		t.Fatalf("old session not told: %v", err)
	}
	select {
	case <-c1.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("old session not closed")
	}
	if _, err := c2.NextOf(ctxT(t), protocol.TResume); err != nil {
		t.Fatal(err)
	}
	log, err := c2.Follow(ctxT(t), protocol.Strategy{})
	if err != nil || log.Games[0].Settled == nil {
		t.Fatalf("new session did not finish the game: %v", err)
	}
	ts.checkBooks()
}

// A player who leaves for good: after the grace period any server settles
// the game with the defaults (Stop, first box).
func TestAbandonedGameSettlesAfterGrace(t *testing.T) {
	ts := startServer(t, nil, withGrace(300*time.Millisecond))
	picks := []int{4, 8, 12, 16, 20, 24}
	c := ts.player("gone", 5_000)
	o := forceNext(t, ts.app.Redis, "gone", picks, 100, socAndExtra)
	acc := confirm(t, c, grid(100, picks...))
	untilType(t, c, protocol.TMainResult)
	c.CloseNow()
	game := acc.Games[0].Game
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := ts.app.Store.Game(context.Background(), "gone", game)
		if err == nil && g.Status == "settled" {
			want, _ := engine.Default().Settle(&o, engine.Choices{})
			if g.Win != want.Win || g.Result.Continued || g.Result.Box != 0 {
				t.Fatalf("recovered with %+v, want defaults (win %d)", g.Result, want.Win)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("abandoned game never settled")
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.checkBooks()
	// The player sees it in their history afterwards.
	c = ts.connect("gone")
	h, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.THistory})
	if err != nil || len(h.History) != 1 || h.History[0].Status != "settled" {
		t.Fatalf("history %+v %v", h, err)
	}
}

// A connected player who never chooses gets the default after the
// decision timeout.
func TestDecisionTimeout(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) { c.Session.DecisionTimeout = 200 * time.Millisecond })
	picks := []int{1, 11, 21, 31, 6, 16}
	c := ts.player("slow", 1_000)
	o := forceNext(t, ts.app.Redis, "slow", picks, 100, func(o *engine.Outcome, m engine.Main) bool { return m.SoC && !m.Green })
	confirm(t, c, grid(100, picks...))
	settled, err := c.NextOf(ctxT(t), protocol.TSettled)
	want, _ := engine.Default().Settle(&o, engine.Choices{})
	if err != nil || settled.Win != want.Win || settled.Result.Continued {
		t.Fatalf("timeout default: %+v %v", settled, err)
	}
}

// Shutdown lets the reveal in progress reach its pause, tells the client,
// and leaves the game for another server to resume.
func TestGracefulShutdownHandsOver(t *testing.T) {
	a := startServer(t, nil)
	shutdownMidGame(t, a, a.player("sam", 1_000))
	resumeElsewhere(t, a, "sam")
}

// shutdownMidGame has sam, connected as c, confirm a game that asks both
// choices, shuts a down, and returns what c received up to the shutdown
// notice, the main result among it: the reveal reached its pause.
func shutdownMidGame(t *testing.T, a *testServer, c *protocol.Client) []*protocol.Message {
	t.Helper()
	picks := []int{3, 6, 9, 12, 15, 18}
	forceNext(t, a.app.Redis, "sam", picks, 100, socAndExtra)
	confirm(t, c, grid(100, picks...))
	go a.shutdown()
	seen := untilType(t, c, protocol.TShutdown)
	for _, m := range seen {
		if m.Type == protocol.TMainResult {
			return seen
		}
	}
	t.Fatal("shutdown cut the reveal before its pause")
	return nil
}

// resumeElsewhere connects the player to another server on a's Redis: the
// game left in play there is resumed and settled, and the books balance.
func resumeElsewhere(t *testing.T, a *testServer, player string) {
	t.Helper()
	b := startServer(t, a.redis)
	log, err := b.connect(player).Follow(ctxT(t), protocol.Strategy{})
	if err != nil || log.Games[0].Settled == nil {
		t.Fatalf("resumed on the other server: %v", err)
	}
	b.checkBooks()
}

// Many players at once, random tickets and strategies: every game the
// clients saw is settled exactly once and the books balance to the cent.
func TestManyPlayersBooksBalance(t *testing.T) {
	ts := startServer(t, nil)
	const players, tickets = 40, 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]int64{}
	for p := 0; p < players; p++ {
		name := fmt.Sprint("crowd", p)
		c := ts.player(name, 10_000)
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			var staked, won int64
			for i := 0; i < tickets; i++ {
				var grids []protocol.Grid
				for g := 0; g < 1+rng.IntN(3); g++ {
					stake := []int64{50, 100, 200}[rng.IntN(3)]
					grids = append(grids, protocol.Grid{QuickPick: 3 + rng.IntN(6), Stake: stake})
					staked += stake
				}
				log, err := c.Play(ctxT(t), grids, protocol.Strategy{
					Continue: func(*engine.Main) bool { return rng.IntN(2) == 0 },
					Box:      func() int { return rng.IntN(5) },
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, g := range log.Games {
					if _, dup := seen[g.Game]; dup {
						t.Errorf("game %s seen twice", g.Game)
					}
					seen[g.Game] = g.Settled.Win
					won += g.Settled.Win
				}
				mu.Unlock()
			}
			if bal := ts.balance(name); bal != 10_000-staked+won {
				t.Errorf("%s: wallet %d, client saw %d", name, bal, 10_000-staked+won)
			}
		}(p)
	}
	wg.Wait()
	ts.checkBooks()
	// Every game paid once: one "win" ledger row each (the journal entries' l… fields).
	credits := map[string]int{}
	for p := 0; p < players; p++ {
		msgs, _ := ts.app.Redis.XRange(context.Background(), fmt.Sprintf("{p:crowd%d}:journal", p), "-", "+").Result()
		for _, m := range msgs {
			if m.Values["lk"] == "win" {
				credits[m.Values["lr"].(string)]++
			}
		}
	}
	if len(credits) != len(seen) {
		t.Errorf("%d games credited, clients saw %d", len(credits), len(seen))
	}
	// Settled games leave the recovery index (in batches, a few times a second).
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n, err := ts.app.Store.Recovery().Count(context.Background())
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries left in the recovery index after every game settled (%v)", n, err)
		}
	}
	for g := range seen {
		if credits[g] != 1 {
			t.Errorf("game %s credited %d times", g, credits[g])
		}
	}
}

// The reaper closes a connection that says nothing for IdleTimeout; a
// client's heartbeat, which pings only after a silence, keeps an idle one
// open well past it.
func TestSilentConnectionsAreReaped(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) { c.Session.IdleTimeout = 2 * time.Second })
	silent := ts.player("silent", 0)
	alive := ts.player("alive", 0)
	alive.Heartbeat(500 * time.Millisecond)
	t0 := time.Now()
	for {
		if _, err := silent.Next(ctxT(t)); err != nil {
			if !errors.Is(err, protocol.ErrClosed) {
				t.Fatalf("the silent connection was not reaped: %v", err)
			}
			break
		}
	}
	if waited := time.Since(t0); waited < time.Second {
		t.Fatalf("reaped after %v, before its idle timeout", waited)
	}
	time.Sleep(2 * time.Second) // past twice the idle timeout in all
	if _, err := alive.Request(ctxT(t), &protocol.Request{Type: protocol.TBalance}); err != nil {
		t.Fatalf("the heartbeating client was dropped: %v", err)
	}
}
