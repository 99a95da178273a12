package app

import (
	"strings"
	"testing"
	"time"

	"keno/engine"
	"keno/protocol"
	"keno/server/wallet"
)

// Bad input gets a typed error, changes nothing, and never kills the session.
func TestBadInputIsRefusedAndHarmless(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) { c.Session.MsgBurst, c.Session.AbuseLimit = 200, 200 }) // many cases in a row
	c := ts.player("mallory", 1_000)
	ctx := ctxT(t)
	cases := []struct {
		frame string
		code  string
	}{
		{`{not json`, protocol.CodeBadRequest},
		{`[1,2,3]`, protocol.CodeBadRequest},
		{`{"type":"ticket","id":"1"}{"type":"ping"}`, protocol.CodeBadRequest},
		{`{"type":"launch_missiles","id":"2"}`, protocol.CodeUnknownType},
		{`{"type":"ticket","id":"3","grids":[{"picks":[1,2],"stake":100}]}`, protocol.CodeInvalidPicks},
		{`{"type":"ticket","id":"4","grids":[{"picks":[1,2,2],"stake":100}]}`, protocol.CodeInvalidPicks},
		{`{"type":"ticket","id":"5","grids":[{"picks":[0,2,3],"stake":100}]}`, protocol.CodeInvalidPicks},
		{`{"type":"ticket","id":"6","grids":[{"picks":[1,2,3],"stake":75}]}`, protocol.CodeInvalidStake},
		{`{"type":"ticket","id":"7","grids":[{"picks":[1,2,3],"quick_pick":5,"stake":100}]}`, protocol.CodeInvalidPicks},
		{`{"type":"ticket","id":"8","grids":[{"quick_pick":9,"stake":100}]}`, protocol.CodeInvalidPicks},
		{`{"type":"ticket","id":"9","grids":[]}`, protocol.CodeBadRequest},
		{`{"type":"ticket","id":"10","grids":[{"picks":[1,2,3],"stake":100},{"picks":[1,2,3],"stake":100},{"picks":[1,2,3],"stake":100},{"picks":[1,2,3],"stake":100},{"picks":[1,2,3],"stake":100},{"picks":[1,2,3],"stake":100}]}`, protocol.CodeBadRequest},
		{`{"type":"ticket","id":"11","grids":[{"picks":[1,2,3],"stake":100}],"extra":true}`, protocol.CodeBadRequest},
		{`{"type":"confirm","id":"12","ticket":"no-such-ticket"}`, protocol.CodeNoSuchTicket},
		{`{"type":"choice","id":"13","game":"g","continue":true}`, protocol.CodeNotYourTurn},
		{`{"type":"box","id":"14","game":"g","box":7}`, protocol.CodeBadRequest},
		{`{"type":"box","id":"15","game":"g","box":1}`, protocol.CodeNotYourTurn},
		{`{"type":"hello","id":"16","token":"x"}`, protocol.CodeBadRequest},
		{`{"type":"deposit","id":"17","amount":-5,"op":"x"}`, protocol.CodeBadAmount},
		{`{"type":"ticket","grids":[{"picks":[1,2,3],"stake":100}]}`, protocol.CodeBadRequest},
		{`{"type":"game","id":"18","game":"nope"}`, protocol.CodeNoSuchGame},
		{`{"type":"ticket","id":"19","grids":[{"picks":[1,2,3],"stake":1e400}]}`, protocol.CodeBadRequest},
		{`{"type":"ticket","id":"20","grids":[{"picks":[1.5,2,3],"stake":100}]}`, protocol.CodeBadRequest},
		{`{"type":"ticket","id":"21","grids":[{"picks":["1",2,3],"stake":100}]}`, protocol.CodeBadRequest},
		{`{"type":"ticket","id":"22","grids":[{"picks":[1,2,3],"stake":100.5}]}`, protocol.CodeBadRequest},
		{`{"type":"ticket","id":"23","grids":[{"picks":[1,2,3],"stake":"100"}]}`, protocol.CodeBadRequest},
		{`{"type":"ticket","id":"24","grids":[{"picks":[1,2,3],"stake":1e2}]}`, protocol.CodeBadRequest},
		{`{"type":"deposit","id":"25","amount":1.5,"op":"x"}`, protocol.CodeBadRequest},
		{`{"type":"deposit","id":"26","amount":"100","op":"x"}`, protocol.CodeBadRequest},
		{`{"type":"deposit","id":"27","amount":1e3,"op":"x"}`, protocol.CodeBadRequest},
		{`{"type":"deposit","id":"28","amount":9223372036854775808,"op":"x"}`, protocol.CodeBadRequest},
		{`{"type":"deposit","id":"29","amount":100000001,"op":"x"}`, protocol.CodeBadAmount},
		{`{"type":"deposit","id":"30","amount":9223372036854775807,"op":"x"}`, protocol.CodeBadAmount},
		{`{"type":"set_limit","id":"31","kind":"loss_limit","value":100000000000000000}`, protocol.CodeBadAmount},
		{`{"type":"set_limit","id":"32","kind":"excluded_until","value":9223372036854775807}`, protocol.CodeBadRequest},
		{`{"type":"balance","id":"33"}]`, protocol.CodeBadRequest},
		{`{"TYPE":"balance","id":"34"}`, protocol.CodeBadRequest},
		{`{"type":"balance","type":"ping","id":"35"}`, protocol.CodeBadRequest},
	}
	for _, tc := range cases {
		if err := c.SendRaw(ctx, []byte(tc.frame)); err != nil {
			t.Fatal(err)
		}
		// Errors for requests with an id come back to Send's waiter only if
		// registered; raw frames' errors arrive as pushed messages.
		m, err := c.NextOf(ctx, protocol.TError)
		if err != nil {
			t.Fatalf("%s: connection lost: %v", tc.frame, err)
		}
		if m.Error.Code != tc.code || m.Error.Message == "" {
			t.Errorf("%s: got %s (%s), want %s", tc.frame, m.Error.Code, m.Error.Message, tc.code)
		}
		// Every reply to a request carries its id, refusals included.
		if id := protocol.IDOf([]byte(tc.frame)); m.ID != id {
			t.Errorf("%s: error for id %q, want %q", tc.frame, m.ID, id)
		}
	}
	// The session is alive and nothing moved.
	if m, err := c.Request(ctx, &protocol.Request{Type: protocol.TBalance}); err != nil || *m.Balance != 1_000 {
		t.Fatalf("after bad input: %+v %v", m, err)
	}
	ts.checkBooks()

	// Binary frames are refused too.
	if err := c.SendRaw(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TPing}); err != nil {
		t.Fatalf("ping after an empty frame: %v", err)
	}

	// An oversized frame closes the connection (the read limit).
	big := `{"type":"ping","id":"` + strings.Repeat("x", protocol.MaxFrame) + `"}`
	c.SendRaw(ctx, []byte(big))
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("oversized frame did not close the connection")
	}
	if ts.balance("mallory") != 1_000 {
		t.Fatal("money moved")
	}
}

func TestAuthentication(t *testing.T) {
	ts := startServer(t, nil)
	ctx := ctxT(t)
	// Nothing before hello.
	c, err := protocol.Dial(ctx, ts.url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TBalance}); errCode(err) != protocol.CodeUnauthorized {
		t.Fatalf("balance before hello: %v", err)
	}
	stale := ts.app.Signer.Issue("late", time.Now().Add(-time.Minute))
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.THello, Token: stale}); errCode(err) != protocol.CodeUnauthorized {
		t.Fatalf("stale token: %v", err)
	}
	forged := ts.app.Signer.Issue("late", time.Now().Add(time.Hour)) + "x"
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.THello, Token: forged}); errCode(err) != protocol.CodeUnauthorized {
		t.Fatalf("forged token: %v", err)
	}
	tok := ts.app.Signer.Issue("late", time.Now().Add(time.Hour))
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.THello, Token: tok, Versions: []int{99}}); errCode(err) != protocol.CodeUnsupported {
		t.Fatalf("unknown version: %v", err)
	}
	c2, err := protocol.Connect(ctx, ts.url, tok)
	if err != nil || c2.Welcome.Version != protocol.Version || c2.Welcome.Player != "late" || c2.Welcome.Config == nil || c2.Welcome.Fair == nil {
		t.Fatalf("welcome %+v %v", c2.Welcome, err)
	}
	c2.Close()
}

func TestMoneyRefusals(t *testing.T) {
	ts := startServer(t, nil)
	ctx := ctxT(t)
	c := ts.player("poor", 150)
	grids := []protocol.Grid{grid(100, 1, 2, 3), grid(100, 4, 5, 6)}
	sum, err := c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: grids})
	if err != nil || len(sum.Warnings) != 1 || !strings.HasPrefix(sum.Warnings[0], "insufficient_funds") {
		t.Fatalf("summary should warn of the balance: %+v %v", sum, err)
	}
	_, err = c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket})
	e, _ := err.(*protocol.Error)
	if e == nil || e.Code != protocol.CodeInsufficientFunds || e.Available != 150 || !strings.Contains(e.Message, "deposit") {
		t.Fatalf("insufficient funds: %v", err)
	}
	if ts.balance("poor") != 150 {
		t.Fatal("a refused ticket moved money")
	}

	// A daily loss limit of 1 €: one 1 € game passes, then the next is refused.
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TSetLimit, Kind: "loss_limit", Value: 100}); err != nil {
		t.Fatal(err)
	}
	forceNext(t, ts.app.Redis, "poor", []int{1, 2, 3}, 100, func(o *engine.Outcome, m engine.Main) bool { return m.Gain == 0 && !m.Green })
	if _, err := c.Play(ctx, []protocol.Grid{grid(100, 1, 2, 3)}, protocol.Strategy{}); err != nil {
		t.Fatal(err)
	}
	sum, _ = c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(50, 1, 2, 3)}})
	if len(sum.Warnings) == 0 || !strings.HasPrefix(sum.Warnings[0], "loss_limit") {
		t.Fatalf("summary should warn of the loss limit: %+v", sum.Warnings)
	}
	_, err = c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket})
	if e, _ := err.(*protocol.Error); e == nil || e.Code != protocol.CodeLimitReached || e.Reason != "loss_limit" || e.Available != 0 {
		t.Fatalf("over the loss limit: %v", err)
	}

	// Deposits over the weekly cap are refused with the room left.
	_, err = c.Request(ctx, &protocol.Request{Type: protocol.TDeposit, Amount: 200_000, Op: "big"})
	if e, _ := err.(*protocol.Error); e == nil || e.Reason != "deposit_cap" || e.Available <= 0 {
		t.Fatalf("deposit over the cap: %v", err)
	}

	// Self-exclusion for two days takes effect at once: a ticket built
	// before cannot be confirmed, no new ticket, no deposit; it cannot be
	// shortened or extended; withdrawals stay possible.
	before, _ := c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(50, 1, 2, 3)}})
	until := time.Now().Add(48 * time.Hour).UnixMilli()
	if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TSetLimit, Kind: "excluded_until", Value: until}); err != nil {
		t.Fatal(err)
	}
	excluded := func(what string, err error) {
		t.Helper()
		if e, _ := err.(*protocol.Error); e == nil || e.Code != protocol.CodeLimitReached || e.Reason != "self_excluded" || e.Limit != until {
			t.Fatalf("%s while self-excluded: %v", what, err)
		}
	}
	_, err = c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: before.Ticket})
	excluded("confirm", err)
	_, err = c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(50, 1, 2, 3)}})
	excluded("ticket", err)
	_, err = c.Request(ctx, &protocol.Request{Type: protocol.TDeposit, Amount: 100, Op: "while-excluded"})
	excluded("deposit", err)
	for _, other := range []int64{until - 3_600_000, until + 86_400_000} {
		_, err = c.Request(ctx, &protocol.Request{Type: protocol.TSetLimit, Kind: "excluded_until", Value: other})
		if e, _ := err.(*protocol.Error); e == nil || e.Code != protocol.CodeExclusion || e.Limit != until {
			t.Fatalf("changing a running exclusion: %v", err)
		}
	}
	if _, err := ts.app.Store.Cashier(ctx, "withdraw", "poor", "out", 10); err != nil {
		t.Fatalf("withdrawal while self-excluded: %v", err)
	}
	ts.checkBooks()
}

func TestRateLimits(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) { c.Wallet.BetRate = wallet.Rate{PerSecond: 2, Burst: 3} })
	ctx := ctxT(t)
	c := ts.player("flood", 10_000)
	// A message flood: refused with retry advice, then the connection is cut.
	refused := 0
	for i := 0; i < 200; i++ {
		if err := c.SendRaw(ctx, []byte(`{"type":"balance","id":"x"}`)); err != nil {
			break
		}
	}
	for {
		m, err := c.Next(ctx)
		if err != nil {
			break // closed for sustained abuse
		}
		if m.Type == protocol.TError && m.Error.Code == protocol.CodeRateLimited {
			refused++
			if m.Error.RetryMS <= 0 {
				t.Fatalf("rate_limited without retry advice: %+v", m.Error)
			}
		}
	}
	if refused < ts.app.Cfg.Session.AbuseLimit {
		t.Fatalf("%d refusals before the cut", refused)
	}

	// Bets per player: a burst of confirms is held to the budget.
	c = ts.connect("flood")
	codes := map[string]int{}
	for i := 0; i < 15; i++ {
		sum, err := c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(50, 1, 2, 3)}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket})
		codes[errCode(err)]++
		if err == nil {
			if _, err := c.Follow(ctx, protocol.Strategy{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if codes[protocol.CodeRateLimited] == 0 || codes[""] == 0 {
		t.Fatalf("bet rate limit: %v", codes)
	}
	ts.checkBooks()
}
