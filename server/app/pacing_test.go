package app

import (
	"context"
	"testing"
	"time"

	"keno/engine"
	"keno/protocol"
)

// A pace slow enough to measure on a busy machine, fast enough for a test.
func paced(c *Config) {
	c.Session.ColorInterval, c.Session.NumberInterval, c.Session.SoCInterval = 20*time.Millisecond, 100*time.Millisecond, 40*time.Millisecond
	c.Session.ResultHold = 800 * time.Millisecond
}

type received struct {
	m  *protocol.Message
	at time.Time
}

// followTimed reads pushed messages until ticket_done, answering offers
// with Stop and the first box, and notes when each arrived.
func followTimed(t *testing.T, c *protocol.Client) []received {
	t.Helper()
	var got []received
	for {
		m, err := c.Next(ctxT(t))
		if err != nil {
			t.Fatalf("after %d messages: %v", len(got), err)
		}
		got = append(got, received{m, time.Now()})
		switch m.Type {
		case protocol.TSoCOffer:
			stop := false
			c.Send(context.Background(), &protocol.Request{Type: protocol.TChoice, Game: m.Game, Continue: &stop})
		case protocol.TExtraOffer:
			box := 0
			c.Send(context.Background(), &protocol.Request{Type: protocol.TBox, Game: m.Game, Box: &box})
		case protocol.TTicketDone:
			return got
		case protocol.TError:
			t.Fatalf("error: %+v", m.Error)
		}
	}
}

// checkPace: within a game t never goes backwards; each game starts at
// least ResultHold after the previous one's settlement, on the clock and
// in its scheduled t.
func checkPace(t *testing.T, got []received, hold time.Duration) (settled []int64) {
	t.Helper()
	var lastT int64
	var settledAt time.Time
	var lastTimed int64
	for _, r := range got {
		m := r.m
		if m.Type == protocol.TGameStart {
			if !settledAt.IsZero() {
				if gap := r.at.Sub(settledAt); gap < hold/2 {
					t.Errorf("game %d started %v after the previous result (hold %v)", m.Index, gap, hold)
				}
				if m.T-lastTimed < hold.Milliseconds() {
					t.Errorf("game %d scheduled %d ms after the previous game's last reveal (hold %v)", m.Index, m.T-lastTimed, hold)
				}
			}
			lastT = 0
		}
		if m.T != 0 {
			if m.T < lastT {
				t.Errorf("%s t=%d before the previous message's t=%d", m.Type, m.T, lastT)
			}
			lastT, lastTimed = m.T, m.T
		}
		if m.Type == protocol.TSettled {
			settledAt = r.at
			settled = append(settled, m.Win)
		}
	}
	return settled
}

// A 3-grid ticket at a human pace: each result stays on screen for the
// hold before the next game starts, and the ticket ends with every grid's
// win.
func TestTicketHoldsEachResult(t *testing.T) {
	ts := startServer(t, nil, paced)
	c := ts.player("holder", 5_000)
	confirm(t, c, grid(100, 1, 2, 3, 4, 5, 6), grid(100, 7, 8, 9), grid(50, 10, 20, 30, 40))
	got := followTimed(t, c)
	wins := checkPace(t, got, 800*time.Millisecond)
	done := got[len(got)-1].m
	if len(wins) != 3 || len(done.Wins) != 3 {
		t.Fatalf("settled %v, ticket_done.wins %v", wins, done.Wins)
	}
	var total int64
	for i := range wins {
		if done.Wins[i] != wins[i] {
			t.Errorf("ticket_done.wins[%d]=%d, the game settled %d", i, done.Wins[i], wins[i])
		}
		total += wins[i]
	}
	if done.Win != total {
		t.Errorf("ticket_done.win %d, the grids won %d", done.Win, total)
	}
}

// A reload in the middle of game 1 of a 3-grid ticket: what was shown comes
// back at once, the rest of game 1 and games 2 and 3 at their normal pace,
// and no t goes backwards.
func TestResumeKeepsThePace(t *testing.T) {
	ts := startServer(t, nil, paced)
	picks := []int{3, 8, 14, 21, 27, 33}
	c := ts.player("reloader", 5_000)
	// A game that reveals all ten numbers and asks nothing.
	forceNext(t, ts.app.Redis, "reloader", picks, 100, func(o *engine.Outcome, m engine.Main) bool {
		return !m.SoC && !m.Green && m.Revealed == engine.Drawn
	})
	confirm(t, c, grid(100, picks...), grid(100, picks...), grid(100, picks...))
	var seen int
	for seen < 3 { // three numbers shown, then the page reloads
		m, err := c.Next(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == protocol.TNumber {
			seen++
		}
	}
	c.Close()

	c = ts.connect("reloader")
	back := time.Now()
	if len(c.Welcome.Games) != 3 {
		t.Fatalf("welcome lists %d games to resume", len(c.Welcome.Games))
	}
	got := followTimed(t, c)
	checkPace(t, got, 800*time.Millisecond)
	var numbers []time.Time
	for _, r := range got {
		if r.m.Type == protocol.TNumber && r.m.Game == c.Welcome.Games[0].Game {
			numbers = append(numbers, r.at)
		}
	}
	if len(numbers) != engine.Drawn {
		t.Fatalf("game 1 showed %d numbers", len(numbers))
	}
	// What was shown comes back at once...
	if d := numbers[seen-1].Sub(back); d > 300*time.Millisecond {
		t.Errorf("the numbers already shown took %v to come back", d)
	}
	// ...the rest at its pace (100 ms apart; the last few at least were
	// still to come, however long the reconnection took).
	if d := numbers[engine.Drawn-1].Sub(numbers[seen]); d < 200*time.Millisecond {
		t.Errorf("the rest of game 1 was rushed: %v for %d numbers", d, engine.Drawn-seen-1)
	}
	// Games 2 and 3 were not started: each waits its hold, so the ticket
	// takes at least two holds after the reload.
	if d := got[len(got)-1].at.Sub(back); d < 2*800*time.Millisecond {
		t.Errorf("the rest of the ticket arrived in %v: games 2 and 3 were not paced", d)
	}
}

// Protocol version 2: each step of a game leaves at once, ahead of its t
// (the client shows each message at its t); a choice made on what is on
// screen is honoured even when the offer was sent more than the decision
// timeout before it was shown; the game is settled only once its last
// step is due, so the settlement never overtakes what the player sees.
func TestAheadSendsEachStepAtOnce(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) {
		c.Session.ColorInterval, c.Session.NumberInterval, c.Session.SoCInterval = 60*time.Millisecond, 60*time.Millisecond, 150*time.Millisecond
		c.Session.ResultHold = 300 * time.Millisecond
		c.Session.DecisionTimeout = 300 * time.Millisecond
	})
	before := time.Now().UnixMilli()
	c := ts.playerIn(2, "ahead", 5_000)
	if w := c.Welcome; w.Version != 2 || w.Now < before || w.Now > time.Now().UnixMilli() {
		t.Fatalf("welcome version %d, now %d (connected at %d)", w.Version, w.Now, before)
	}
	picks := []int{3, 8, 14, 21, 27, 33}
	forceNext(t, ts.app.Redis, "ahead", picks, 100, func(o *engine.Outcome, m engine.Main) bool { return m.SoC && !m.Green })
	confirm(t, c, grid(100, picks...))

	var got []received
	next := func() *protocol.Message {
		m, err := c.Next(ctxT(t))
		if err != nil {
			t.Fatalf("after %d messages: %v", len(got), err)
		}
		got = append(got, received{m, time.Now()})
		return m
	}
	var lastT int64
	for m := next(); m.Type != protocol.TSoCOffer; m = next() {
		lastT = max(lastT, m.T)
	}
	// Step 1 (ten colours, 540 ms) and step 2 (≥ 1 number) came at once:
	// the offer is here while the main result is still to be shown.
	offered := got[len(got)-1].at
	if offered.UnixMilli() >= lastT {
		t.Fatalf("the offer arrived at %d, after the main result's t %d: nothing was sent ahead", offered.UnixMilli(), lastT)
	}
	// Answer once the result is on screen, past the decision timeout
	// counted from the offer's sending.
	shown := time.UnixMilli(lastT)
	time.Sleep(time.Until(shown.Add(100 * time.Millisecond)))
	cont := true
	chose := time.Now()
	if _, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TChoice, Game: got[0].m.Game, Continue: &cont}); err != nil {
		t.Fatalf("a choice made 100 ms after the offer was shown: %v", err)
	}
	var draws []received
	for m := next(); m.Type != protocol.TTicketDone; m = next() {
		switch m.Type {
		case protocol.TSoCDraw:
			draws = append(draws, got[len(got)-1])
			lastT = max(lastT, m.T)
		case protocol.TSettled:
			if at := got[len(got)-1].at.UnixMilli(); at < lastT {
				t.Errorf("settled at %d, before the last draw's t %d", at, lastT)
			}
		case protocol.TError:
			t.Fatalf("error: %+v", m.Error)
		}
	}
	if len(draws) != 3 {
		t.Fatalf("%d Stop-or-Continue draws", len(draws))
	}
	if d := draws[2].at.Sub(chose); d >= 2*150*time.Millisecond {
		t.Errorf("the draws were paced (the last came %v after the choice), not sent ahead", d)
	}
	if first := time.UnixMilli(draws[0].m.T); first.Before(chose) {
		t.Errorf("the first draw is scheduled at %v, before the choice at %v", first, chose)
	}
	checkPace(t, got, 300*time.Millisecond)
	ts.checkBooks()
}

// In version 2 a shutdown still lets the reveal reach its pause on the
// player's screen — the offer's turn, not the instant it was sent ahead —
// and the game resumes on another server.
func TestAheadShutdownWaitsForTheScreen(t *testing.T) {
	a := startServer(t, nil, func(c *Config) {
		c.Session.ColorInterval, c.Session.NumberInterval = 60*time.Millisecond, 60*time.Millisecond
	})
	seen := shutdownMidGame(t, a, a.playerIn(2, "sam", 1_000))
	at := time.Now().UnixMilli()
	var shown int64 // the main result's t: the offer is on screen after it
	for _, m := range seen {
		if m.Type == protocol.TMainResult {
			shown = m.T
		}
	}
	if at < shown {
		t.Errorf("shutdown announced at %d, before the offer's turn on screen at %d", at, shown)
	}
	resumeElsewhere(t, a, "sam")
}
