package app

import (
	"fmt"
	"testing"

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
