package session

import (
	"math"
	"testing"
	"time"
)

func TestNextLimit(t *testing.T) {
	for _, c := range []struct {
		name          string
		limit, inPlay int64
		cutBy         int
		onTime        bool
		want          int64
	}{
		{"no limit, on time: none", math.MaxInt64, 5000, 0, true, math.MaxInt64},
		{"first trouble: nine tenths of what is in play", math.MaxInt64, 5000, 1, false, 4500},
		{"p99 twice past: three quarters", math.MaxInt64, 5000, 2, false, 3750},
		{"p99 four times past: three fifths", math.MaxInt64, 5000, 3, false, 3000},
		{"trouble, cut not due yet: unchanged", 4500, 4400, 0, false, 4500},
		{"trouble below the limit: from the limit", 1000, 3000, 1, false, 900},
		{"never below the minimum", 10, 10, 1, false, minLimit},
		{"on time and binding: grows a tenth", 1000, 950, 0, true, 1100},
		{"on time, small: grows by 2", 20, 19, 0, true, 22},
		{"on time, not binding: unchanged", 1000, 500, 0, true, 1000},
	} {
		if got := nextLimit(c.limit, c.inPlay, c.cutBy, c.onTime, 0); got != c.want {
			t.Errorf("%s: nextLimit(%d, %d, %d, %v) = %d, want %d", c.name, c.limit, c.inPlay, c.cutBy, c.onTime, got, c.want)
		}
	}
}

// A cut stops at half the best level served on time lately, unless the
// limit was lower already.
func TestNextLimitFloor(t *testing.T) {
	if got := nextLimit(math.MaxInt64, 1000, 3, false, 800); got != 800 {
		t.Errorf("a deep cut under the floor: %d, want 800", got)
	}
	if got := nextLimit(500, 1000, 1, false, 800); got != 500 {
		t.Errorf("a limit already under the floor: %d, want 500", got)
	}
	if got := nextLimit(5000, 4000, 1, false, 800); got != 3600 {
		t.Errorf("a cut above the floor: %d, want 3600", got)
	}
}

func TestAdmissionTakeAndDone(t *testing.T) {
	a := newAdmission(3, 0, nil)
	if !a.take(2) || a.take(2) || !a.open(1) || a.open(2) {
		t.Fatal("ceiling of 3: 2 then 2 more must be refused, 1 more allowed")
	}
	a.force(5) // resumed games are never refused
	if a.inPlay.Load() != 7 || a.open(1) {
		t.Fatalf("in play %d", a.inPlay.Load())
	}
	a.done(7)
	if !a.take(3) || a.refused.Load() != 1 {
		t.Fatalf("after done: take 3 must pass; refused %d", a.refused.Load())
	}
}

func TestSeverity(t *testing.T) {
	a := newAdmission(0, 0, nil)
	for range 1000 {
		a.sent(time.Millisecond)
	}
	for range 20 { // 2 %: 31 ms late, past 15 and 30 ms, not 60
		a.sent(31 * time.Millisecond)
	}
	if got := severity(a.timed.Swap(0), &a.late); got != 2 {
		t.Fatalf("severity %d, want 2", got)
	}
	if got := severity(a.timed.Swap(0), &a.late); got != 0 {
		t.Fatalf("after the window: severity %d, want 0", got)
	}
	for range 50 { // too few to judge
		a.accepted(time.Second, 0)
	}
	if got := severity(a.bets.Swap(0), &a.slow); got != 0 {
		t.Fatalf("50 bets judged: severity %d", got)
	}
}

// A bet slowed by the operator's wallet (seamless mode) is judged with
// only the wallet's share of its time: refusing players would not speed
// the wallet up. Within its share, the wallet's time counts.
func TestSlowWalletIsNotTheServers(t *testing.T) {
	a := newAdmission(0, 0, nil)
	for range 200 { // 80 ms each, 70 of them at a slow wallet: 20 ms the server's
		a.accepted(80*time.Millisecond, 70*time.Millisecond)
	}
	if got := severity(a.bets.Swap(0), &a.slow); got != 0 {
		t.Fatalf("bets slow for the wallet's sake judged severity %d, want 0", got)
	}
	for range 200 { // 40 ms, 8 of them at a fast wallet: 40 ms count, past 35
		a.accepted(40*time.Millisecond, 8*time.Millisecond)
	}
	if got := severity(a.bets.Swap(0), &a.slow); got != 1 {
		t.Fatalf("bets slow with a fast wallet: severity %d, want 1", got)
	}
}

// One slow second cuts nothing (a disk stall or a neighbour's burst slows
// every game at once); trouble two seconds in a row does, by what both
// share, and no more often than the cut gap.
func TestJudgeCutsOnlySustainedTrouble(t *testing.T) {
	j := judge{cutGap: 3 * time.Second}
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	limit := int64(math.MaxInt64)
	steps := []struct {
		sev  int
		want int64
	}{
		{0, math.MaxInt64}, // on time: no limit
		{3, math.MaxInt64}, // one stall, however bad: nothing
		{0, math.MaxInt64}, // back on time
		{2, math.MaxInt64}, // trouble begins…
		{1, 900},           // …and lasts: cut by what both share (a tenth)
		{3, 900},           // still troubled, but a cut is not due yet
		{0, 990},           // on time, the limit binding: grown a tenth
	}
	for i, s := range steps {
		if limit = j.next(at(i), s.sev, limit, 1000); limit != s.want {
			t.Fatalf("second %d (severity %d): limit %d, want %d", i, s.sev, limit, s.want)
		}
	}
	// Trouble after the gap, with 880 in play: cut again, from the limit.
	j.next(at(8), 2, limit, 880)
	if limit = j.next(at(9), 2, limit, 880); limit != 660 {
		t.Fatalf("sustained trouble after the gap: limit %d, want 660 (three quarters of 880)", limit)
	}
	// A slow second while the limit binds does not grow it.
	if got := j.next(at(10), 0, 660, 650); got != 726 {
		t.Fatalf("on time and binding: %d, want 726", got)
	}
	if got := j.next(at(11), 1, 726, 720); got != 726 {
		t.Fatalf("one slow second while binding: %d, want 726 (held)", got)
	}
}
