package app

import (
	"context"
	"fmt"
	"testing"
	"time"

	"keno/engine"
	"keno/protocol"
	"keno/server/wallet"
)

// Each branch of a game, played over a real WebSocket against the real
// server and redis-server; the outcome is chosen through the provably fair
// inputs, and every figure is checked against the engine and the wallet.
func TestGameBranches(t *testing.T) {
	ts := startServer(t, nil)
	picks := []int{3, 8, 13, 21, 27, 34}
	cases := []struct {
		name  string
		want  func(o *engine.Outcome, m engine.Main) bool
		cont  bool
		check func(t *testing.T, o *engine.Outcome, g *protocol.GameLog)
	}{
		{name: "red on a match ends the game at once",
			want: func(o *engine.Outcome, m engine.Main) bool {
				i, red := colorOnHit(o, m, engine.Red)
				_, green := colorOnHit(o, m, engine.Green)
				return red && !green && m.BaseGain > 0 && i < 9
			},
			check: func(t *testing.T, o *engine.Outcome, g *protocol.GameLog) {
				if !g.Main.Red || g.Main.Gain != 0 || g.Settled.Win != 0 || g.Box != -1 {
					t.Errorf("red: %+v win %d", g.Main, g.Settled.Win)
				}
				if len(g.Numbers) != g.Main.Revealed || g.Main.Revealed == 10 {
					t.Errorf("the reveal did not stop at the red: %d numbers shown, revealed=%d", len(g.Numbers), g.Main.Revealed)
				}
			}},
		{name: "gold on a match doubles",
			want: func(o *engine.Outcome, m engine.Main) bool {
				_, gold := colorOnHit(o, m, engine.Gold)
				return gold && !m.Red && !m.Green && m.BaseGain > 0 && !m.SoC
			},
			check: func(t *testing.T, o *engine.Outcome, g *protocol.GameLog) {
				if g.Main.Gain != 2*g.Main.BaseGain || g.Settled.Win != g.Main.Gain {
					t.Errorf("gold: %+v win %d", g.Main, g.Settled.Win)
				}
			}},
		{name: "green unlocks Extra",
			want: func(o *engine.Outcome, m engine.Main) bool { return m.Green && !m.Red && !m.SoC },
			check: func(t *testing.T, o *engine.Outcome, g *protocol.GameLog) {
				if g.Box != 2 || g.Settled.Win != g.Main.Gain+o.Boxes[2] || len(g.Boxes) != 5 {
					t.Errorf("extra: box %d boxes %v win %d", g.Box, g.Boxes, g.Settled.Win)
				}
			}},
		{name: "red after green: gain lost, Extra still played",
			want: func(o *engine.Outcome, m engine.Main) bool {
				gi, green := colorOnHit(o, m, engine.Green)
				ri, red := colorOnHit(o, m, engine.Red)
				return green && red && gi < ri
			},
			check: func(t *testing.T, o *engine.Outcome, g *protocol.GameLog) {
				if g.Main.Gain != 0 || g.Box != 2 || g.Settled.Win != o.Boxes[2] {
					t.Errorf("red after green: %+v box %d win %d", g.Main, g.Box, g.Settled.Win)
				}
			}},
		{name: "Stop-or-Continue won", cont: true,
			want: func(o *engine.Outcome, m engine.Main) bool {
				r, _ := engine.Default().Settle(o, engine.Choices{Continue: true})
				return m.SoC && !m.Green && r.SoCHits > 0
			},
			check: func(t *testing.T, o *engine.Outcome, g *protocol.GameLog) {
				r, _ := engine.Default().Settle(o, engine.Choices{Continue: true})
				if len(g.SoC) != 3 || g.Settled.Win != r.SoCGain || r.SoCGain <= g.Main.Gain {
					t.Errorf("SoC win: draw %v win %d, engine %+v", g.SoC, g.Settled.Win, r)
				}
				for i, n := range g.SoC {
					if uint8(n) != o.SoCDraw[i] {
						t.Errorf("SoC number %d shown %d, recorded %d", i, n, o.SoCDraw[i])
					}
				}
			}},
		{name: "Stop-or-Continue lost", cont: true,
			want: func(o *engine.Outcome, m engine.Main) bool {
				r, _ := engine.Default().Settle(o, engine.Choices{Continue: true})
				return m.SoC && !m.Green && r.SoCHits == 0
			},
			check: func(t *testing.T, o *engine.Outcome, g *protocol.GameLog) {
				if g.Settled.Win != 0 || !g.Continued {
					t.Errorf("SoC loss paid %d", g.Settled.Win)
				}
			}},
		{name: "Stop keeps the gain",
			want: func(o *engine.Outcome, m engine.Main) bool { return m.SoC && !m.Green },
			check: func(t *testing.T, o *engine.Outcome, g *protocol.GameLog) {
				if g.Settled.Win != g.Main.Gain || len(g.SoC) != 0 {
					t.Errorf("stop: win %d gain %d soc %v", g.Settled.Win, g.Main.Gain, g.SoC)
				}
			}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			player := fmt.Sprint("branch", i)
			c := ts.player(player, 10_000)
			o := forceNext(t, ts.app.Redis, player, picks, 100, tc.want)
			before := ts.balance(player)
			log, err := c.Play(ctxT(t), []protocol.Grid{grid(100, picks...)},
				protocol.Strategy{Continue: always(tc.cont), Box: func() int { return 2 }})
			if err != nil {
				t.Fatal(err)
			}
			g := log.Games[0]
			if len(g.Colors) != 10 {
				t.Fatalf("%d colours shown", len(g.Colors))
			}
			for i, col := range g.Colors {
				if col != o.Colors[i].String() {
					t.Fatalf("colour %d shown %s, recorded %s", i, col, o.Colors[i])
				}
			}
			for i, n := range g.Numbers {
				if uint8(n) != o.Numbers[i] {
					t.Fatalf("number %d shown %d, recorded %d", i, n, o.Numbers[i])
				}
			}
			tc.check(t, &o, g)
			if got, want := ts.balance(player), before-100+g.Settled.Win; got != want || *g.Settled.Balance != got || *log.Done.Balance != got {
				t.Errorf("balance %d (shown %d), want %d", got, *g.Settled.Balance, want)
			}
			// The sealed record holds the same game.
			st, err := ts.app.Store.Game(context.Background(), player, g.Game)
			if err != nil || st.Status != "settled" || st.Win != g.Settled.Win || st.Outcome.Numbers != o.Numbers {
				t.Errorf("stored game %+v %v", st, err)
			}
		})
	}
	ts.checkBooks()
}

func TestMultiGridTicket(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.player("multi", 5_000)
	grids := []protocol.Grid{grid(50, 1, 2, 3), {QuickPick: 8, Stake: 200}, grid(100, 10, 20, 30, 40)}
	sum, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TTicket, Grids: grids})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 350 || len(sum.Grids) != 3 || len(sum.Grids[1].Picks) != 8 || !sum.Grids[1].Quick || len(sum.Warnings) != 0 {
		t.Fatalf("summary %+v", sum)
	}
	// "Back": a new ticket replaces the one under review; the old id is gone.
	sum2, _ := c.Request(ctxT(t), &protocol.Request{Type: protocol.TTicket, Grids: grids})
	if _, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket}); errCode(err) != protocol.CodeNoSuchTicket {
		t.Fatalf("confirming a replaced ticket: %v", err)
	}
	acc, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TConfirm, Ticket: sum2.Ticket})
	if err != nil || len(acc.Games) != 3 || *acc.Balance != 5_000-350 {
		t.Fatalf("accepted %+v %v", acc, err)
	}
	// Confirming again (a replayed id) is refused and debits nothing.
	if _, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TConfirm, Ticket: sum2.Ticket}); errCode(err) == "" {
		t.Fatal("a ticket was confirmed twice")
	}
	log, err := c.Follow(ctxT(t), protocol.Strategy{})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i, g := range log.Games {
		if g.Settled == nil {
			t.Fatalf("game %d not settled", i)
		}
		total += g.Settled.Win
	}
	if len(log.Games) != 3 || log.Done.Win != total || ts.balance("multi") != 5_000-350+total {
		t.Fatalf("ticket: %d games, done %+v, balance %d", len(log.Games), log.Done, ts.balance("multi"))
	}
	ts.checkBooks()
}

// A ticket resumed after a reconnection ends with the whole ticket's win,
// the games settled before the break included.
func TestTicketDoneAfterReconnectCountsTheWholeTicket(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) {
		c.Session.ColorInterval, c.Session.NumberInterval = 40*time.Millisecond, 40*time.Millisecond
	})
	picks := []int{2, 4, 6, 8, 10, 12}
	c := ts.player("back", 5_000)
	forceNext(t, ts.app.Redis, "back", picks, 100, func(o *engine.Outcome, m engine.Main) bool { return m.Gain > 0 && !m.SoC && !m.Green })
	acc := confirm(t, c, grid(100, picks...), grid(100, picks...), grid(100, picks...))
	first, err := c.NextOf(ctxT(t), protocol.TSettled)
	if err != nil || first.Win <= 0 {
		t.Fatalf("first game: %+v %v", first, err)
	}
	c.CloseNow() // the network drops during the second game
	c = ts.connect("back")
	if len(c.Welcome.Games) == 0 {
		t.Fatal("nothing to resume: the ticket ended before the drop")
	}
	log, err := c.Follow(ctxT(t), protocol.Strategy{})
	if err != nil || log.Done == nil {
		t.Fatalf("resumed ticket: %v", err)
	}
	var total int64
	for _, g := range acc.Games {
		st, err := ts.app.Store.Game(context.Background(), "back", g.Game)
		if err != nil || st.Status != "settled" {
			t.Fatalf("game %s: %+v %v", g.Game, st, err)
		}
		total += st.Win
	}
	if log.Done.Win != total {
		t.Fatalf("ticket_done.win %d after the reconnection, the ticket won %d", log.Done.Win, total)
	}
}

// A game's last choice — a stop with no Extra after it, an Extra box — is
// recorded with the settlement, in the same money script: after the bet, a
// game so ends in one script, not two. The choice is acknowledged, and the
// boxes shown, once it is recorded; the stored game carries it.
func TestLastChoiceRidesTheSettlement(t *testing.T) {
	ts := startServer(t, nil)
	picks := []int{4, 11, 17, 22, 28, 35}
	stop, box := false, 3
	cases := []struct {
		name  string
		want  func(o *engine.Outcome, m engine.Main) bool
		offer string
		req   protocol.Request
		check func(g *wallet.GameState) bool
	}{
		{"stop, nothing after it", func(o *engine.Outcome, m engine.Main) bool { return m.SoC && !m.Green }, protocol.TSoCOffer,
			protocol.Request{Type: protocol.TChoice, Continue: &stop}, func(g *wallet.GameState) bool { return g.Continue != nil && !*g.Continue }},
		{"an Extra box", func(o *engine.Outcome, m engine.Main) bool { return m.Green && !m.SoC && !m.Red }, protocol.TExtraOffer,
			protocol.Request{Type: protocol.TBox, Box: &box}, func(g *wallet.GameState) bool { return g.Box != nil && *g.Box == box }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			player := "last" + fmt.Sprint(len(tc.name))
			c := ts.player(player, 5_000)
			o := forceNext(t, ts.app.Redis, player, picks, 100, tc.want)
			acc := confirm(t, c, grid(100, picks...))
			_, before := ts.app.Store.Batches()
			offer, err := c.NextOf(ctxT(t), tc.offer)
			if err != nil {
				t.Fatal(err)
			}
			req := tc.req
			req.Game = offer.Game
			if _, err := c.Request(ctxT(t), &req); err != nil {
				t.Fatalf("choice: %v", err)
			}
			seen := untilType(t, c, protocol.TSettled)
			if _, after := ts.app.Store.Batches(); after-before != 1 {
				t.Errorf("%d money scripts from the offer to the settlement, want 1", after-before)
			}
			want, _ := engine.Default().Settle(&o, engine.Choices{Continue: false, Box: box})
			if settled := seen[len(seen)-1]; settled.Win != want.Win || *settled.Balance != 5_000-100+want.Win {
				t.Errorf("settled %d, balance %d; want %d", settled.Win, *settled.Balance, want.Win)
			}
			if tc.offer == protocol.TExtraOffer && (len(seen) != 2 || seen[0].Type != protocol.TExtraResult || *seen[0].Box != box) {
				t.Errorf("after the box: %+v", seen)
			}
			g, err := ts.app.Store.Game(ctxT(t), player, acc.Games[0].Game)
			if err != nil || g.Status != "settled" || !tc.check(g) {
				t.Fatalf("stored game %+v %v", g, err)
			}
		})
	}
	ts.checkBooks()
}
