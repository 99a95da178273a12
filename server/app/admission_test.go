package app

import (
	"errors"
	"testing"
	"time"

	"keno/protocol"
)

// At its limit of games in play a server refuses new tickets busy, with a
// retry_ms and nothing written or debited; the games in play go on; a
// confirm refused busy keeps its ticket, which is accepted once there is
// room again.
func TestBusyRefusesNewTicketsNotGamesInPlay(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) {
		c.Session.MaxInPlay = 2
		c.Session.ColorInterval = 100 * time.Millisecond // long enough to be in play while others ask
	})
	ctx := ctxT(t)
	a, b := ts.player("busy-a", 10_000), ts.player("busy-b", 10_000)
	grid := protocol.Grid{Picks: []int{1, 2, 3, 4, 5}, Stake: 100}

	// b builds a ticket while there is room; a fills the server.
	sumB, err := b.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid}})
	if err != nil {
		t.Fatal(err)
	}
	sumA, err := a.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid, grid}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sumA.Ticket}); err != nil {
		t.Fatal(err)
	}

	busy := func(err error) *protocol.Error {
		t.Helper()
		var e *protocol.Error
		if !errors.As(err, &e) || e.Code != protocol.CodeBusy {
			t.Fatalf("want busy, got %v", err)
		}
		return e
	}
	// Each refusal in a row asks for a longer wait: 0.5–1.5 s, then 1–3 s.
	_, err = b.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sumB.Ticket})
	if e := busy(err); e.RetryMS < 500 || e.RetryMS > 1500 {
		t.Fatalf("first busy: retry_ms %d outside 0.5–1.5 s", e.RetryMS)
	}
	_, err = b.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid}})
	if e := busy(err); e.RetryMS < 1000 || e.RetryMS > 3000 {
		t.Fatalf("second busy: retry_ms %d outside 1–3 s", e.RetryMS)
	}
	if got := ts.balance("busy-b"); got != 10_000 {
		t.Fatalf("a busy refusal debited: balance %d", got)
	}

	// a's games play to the end, then b's waiting ticket is accepted.
	log, err := a.Follow(ctx, protocol.Strategy{})
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Games) != 2 || log.Games[1].Settled == nil {
		t.Fatalf("a's ticket: %d games, the last unsettled", len(log.Games))
	}
	var acc *protocol.Message
	for acc == nil {
		acc, err = b.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sumB.Ticket})
		if err != nil { // a's last game counts done just after its settlement is sent
			busy(err)
			time.Sleep(20 * time.Millisecond)
		}
	}
	if *acc.Balance != 9_900 {
		t.Fatalf("b's balance after the accepted ticket: %d", *acc.Balance)
	}
	if _, err := b.Follow(ctx, protocol.Strategy{}); err != nil {
		t.Fatal(err)
	}
	ts.checkBooks()
}
