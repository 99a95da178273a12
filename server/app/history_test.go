package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"keno/engine"
	"keno/protocol"
)

// The player can check a game: the revealed seed matches the commitment
// shown at acceptance and re-deals exactly the recorded outcome.
func TestProvablyFairAfterRotation(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.player("fair", 1_000)
	ctx := ctxT(t)
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TClientSeed, Seed: "my-own-seed"}); err != nil {
		t.Fatal(err)
	}
	log, err := c.Play(ctx, []protocol.Grid{grid(100, 7, 14, 21, 28), grid(50, 1, 2, 3)}, protocol.Strategy{})
	if err != nil {
		t.Fatal(err)
	}
	rot, err := c.Request(ctx, &protocol.Request{Type: protocol.TRotateSeed})
	if err != nil {
		t.Fatal(err)
	}
	seed, err := engine.DecodeSeed(rot.Fair.Revealed)
	if err != nil || rot.Fair.Games != 2 || rot.Fair.Commit == log.Accepted.Games[0].Commit {
		t.Fatalf("rotation: %+v %v", rot.Fair, err)
	}
	for i, ref := range log.Accepted.Games {
		if engine.SeedCommitment(seed) != ref.Commit {
			t.Fatal("revealed seed does not match the commitment")
		}
		d, err := c.Request(ctx, &protocol.Request{Type: protocol.TGame, Game: ref.Game})
		if err != nil {
			t.Fatal(err)
		}
		det := d.Detail
		again, _ := engine.Default().Deal(engine.NewFairSource(seed, det.Fair.ClientSeed, ref.Nonce), det.Outcome.Picks, det.Outcome.Stake)
		if det.Fair.ClientSeed != "my-own-seed" || fmt.Sprint(again) != fmt.Sprint(det.Outcome) {
			t.Fatalf("game %d does not re-deal:\n%+v\n%+v", i, again, det.Outcome)
		}
		if det.Result == nil || det.Result.Win != log.Games[i].Settled.Win {
			t.Fatalf("detail result %+v", det.Result)
		}
	}
}

// A ticket summarised before the seeds change is dealt from the new ones:
// never from a seed already revealed, and with the client seed in force.
func TestSeedsChangedBeforeConfirm(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.player("late", 1_000)
	ctx := ctxT(t)
	sum, err := c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(100, 5, 10, 15)}})
	if err != nil {
		t.Fatal(err)
	}
	rot, err := c.Request(ctx, &protocol.Request{Type: protocol.TRotateSeed})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TClientSeed, Seed: "chosen-after-summary"}); err != nil {
		t.Fatal(err)
	}
	acc, err := c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Follow(ctx, protocol.Strategy{}); err != nil {
		t.Fatal(err)
	}
	ref := acc.Games[0]
	old, _ := engine.DecodeSeed(rot.Fair.Revealed)
	if ref.Commit != rot.Fair.Commit || ref.Commit == engine.SeedCommitment(old) || ref.Nonce != 1 {
		t.Fatalf("dealt from %s nonce %d; the new seed is %s", ref.Commit, ref.Nonce, rot.Fair.Commit)
	}
	d, err := c.Request(ctx, &protocol.Request{Type: protocol.TGame, Game: ref.Game})
	if err != nil || d.Detail.Fair.ClientSeed != "chosen-after-summary" {
		t.Fatalf("detail %+v %v", d, err)
	}
}

// The Redis wallet's bet writes its games' recovery entries itself, in its
// own script (one fsync less than a write of their own): a ticket
// summarised and never confirmed leaves none; a confirmed ticket's games
// have theirs until they are settled.
func TestUnconfirmedTicketsLeaveNoRecoveryEntries(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.player("shy", 1_000)
	ctx := ctxT(t)
	entries := func() int {
		m, err := ts.app.Redis.ZRange(ctx, "keno:open", 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range m {
			if strings.HasPrefix(e, "shy/") {
				n++
			}
		}
		return n
	}
	eventually := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for entries() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d recovery entries, want %d", what, entries(), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	ticket := func(grids int) string {
		gs := make([]protocol.Grid, grids)
		for i := range gs {
			gs[i] = grid(50, 1, 2, 3)
		}
		sum, err := c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: gs})
		if err != nil {
			t.Fatal(err)
		}
		return sum.Ticket
	}
	ticket(3)
	if n := entries(); n != 0 {
		t.Fatalf("a summarised ticket of 3 grids: %d entries", n)
	}
	id := ticket(2) // replaces the first
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: id}); err != nil {
		t.Fatal(err)
	}
	// Settled entries leave in batches, once both games have been played.
	if n := entries(); n == 0 {
		t.Fatal("a confirmed ticket's games have no recovery entries")
	}
	if _, err := c.Follow(ctx, protocol.Strategy{}); err != nil {
		t.Fatal(err)
	}
	eventually(0, "after the games settled")
	ticket(1)
	c.CloseNow()
	eventually(0, "after leaving with a ticket unconfirmed")
}

func TestHistoryAndReplay(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.player("hist", 5_000)
	ctx := ctxT(t)
	first, _ := c.Play(ctx, []protocol.Grid{grid(200, 1, 2, 3, 4, 5)}, protocol.Strategy{})
	second, _ := c.Play(ctx, []protocol.Grid{grid(50, 10, 20, 30), grid(100, 11, 22, 33, 40)}, protocol.Strategy{})

	h, err := c.Request(ctx, &protocol.Request{Type: protocol.THistory, Limit: 2})
	if err != nil || len(h.History) != 2 || h.History[0].Game != second.Games[1].Game || h.Next == 0 {
		t.Fatalf("history page 1: %+v %v", h, err)
	}
	h2, err := c.Request(ctx, &protocol.Request{Type: protocol.THistory, Before: h.Next, Limit: 2})
	if err != nil || len(h2.History) != 1 || h2.History[0].Game != first.Games[0].Game || h2.History[0].Status != "settled" {
		t.Fatalf("history page 2: %+v %v", h2, err)
	}

	// Replay the last bet: the same two grids, same numbers and stakes.
	for i := 0; i < 2; i++ {
		if i == 1 {
			c = ts.connect("hist") // a fresh session: the last bet comes from Redis
		}
		r, err := c.Request(ctx, &protocol.Request{Type: protocol.TReplay, Last: true})
		if err != nil || len(r.Grids) != 2 || fmt.Sprint(r.Grids[0].Picks) != "[10 20 30]" || r.Grids[1].Stake != 100 || r.Total != 150 {
			t.Fatalf("replay last: %+v %v", r, err)
		}
	}
	// Replay a game from the history, then confirm it.
	r, err := c.Request(ctx, &protocol.Request{Type: protocol.TReplay, Game: first.Games[0].Game})
	if err != nil || len(r.Grids) != 1 || fmt.Sprint(r.Grids[0].Picks) != "[1 2 3 4 5]" || r.Total != 200 {
		t.Fatalf("replay game: %+v %v", r, err)
	}
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: r.Ticket}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Follow(ctx, protocol.Strategy{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TReplay, Game: "nope"}); errCode(err) != protocol.CodeNoSuchGame {
		t.Fatalf("replay unknown: %v", err)
	}
	ts.checkBooks()
}
