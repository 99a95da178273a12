package session

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"keno/protocol"
)

// admission keeps the games already accepted on time by refusing new
// tickets (busy, with a retry_ms) when the server cannot keep them so.
//
// An accepted game costs this server and Redis work all along its reveal,
// so the number of games in play is what loads them, and what is limited.
// Until the first sign of trouble there is no limit. Then, each second:
//   - trouble — over 1 % of the timed messages went out late, or of the
//     bets were slow to be accepted (their p99 passed the server's share of
//     the goals; in seamless mode, the operator's wallet's time beyond
//     walletShare left out: refusing players does not speed up a slow
//     wallet) — in this second and the one before cuts the limit by a
//     tenth, a quarter or two fifths as the p99 of both was 1, 2 or 4 times
//     past; at most once per game's reveal, so that one cut has taken
//     effect before the next is judged. One slow second alone cuts
//     nothing: an fsync stall under Redis or a neighbour's burst slows
//     every game at once for a moment, and refusing players would not have
//     shortened it (measured: one such second cut the limit at a third of
//     capacity in 5 of 6 runs of 2 000 players);
//   - a second on time, with the limit holding play back, raises it by a
//     tenth.
//
// A cut never goes below half of what was in play in the best second on
// time of the last minute or so: a stall that is not the games' doing (a
// slow disk under Redis, a neighbour taking the CPU) must not shut out
// players the server can serve. Games being resumed are never refused:
// they were accepted before. The operator may also set a fixed ceiling
// (MAX_GAMES_IN_PLAY): the server's tested capacity.
//
// Owner: the counters are written by sessions (atomics); the limit by
// adjust alone, which Hub.Run runs.
type admission struct {
	inPlay  atomic.Int64 // games accepted and not yet finished on this server
	limit   atomic.Int64 // games allowed in play (unlimited: math.MaxInt64)
	ceiling int64        // the operator's fixed maximum (unlimited: math.MaxInt64)

	// This window's evidence, reset by adjust: timed messages sent, and
	// those later than lateBy, twice and four times that; bets accepted,
	// and those slower than slowBet, twice and four times that.
	timed, bets atomic.Int64
	late, slow  [levels]atomic.Int64

	refused atomic.Int64  // tickets refused busy since start (for tests; metrics count too)
	cutGap  time.Duration // between two cuts: a cut takes effect as games finish
	onLimit func(limit int64, inPlay int64)
}

const (
	admitWindow  = time.Second
	lateBy       = 15 * time.Millisecond // the server's share of the 20 ms lateness goal (the network and the client take the rest)
	slowBet      = 35 * time.Millisecond // the server's share of the 50 ms confirm goal
	walletShare  = 10 * time.Millisecond // of slowBet, the operator's wallet's (seamless mode): its time past that is not the server's
	troubleShare = 0.01                  // more than 1 % late or slow: the p99 is past it
	levels       = 3                     // how far past: 1, 2 or 4 times
	minEvidence  = 100                   // samples a window needs to be judged
	minLimit     = 16                    // never shut the door completely
)

// newAdmission makes the controller; a game's reveal lasts about game, and
// the limit is cut at most once in that time (at least a second), so that
// one cut has taken effect before the next is judged.
func newAdmission(ceiling int, game time.Duration, onLimit func(limit, inPlay int64)) *admission {
	a := &admission{onLimit: onLimit, ceiling: math.MaxInt64, cutGap: max(time.Second, game)}
	if ceiling > 0 {
		a.ceiling = int64(ceiling)
	}
	a.limit.Store(math.MaxInt64)
	return a
}

// Admission reports the games in play on this server and how many it
// allows now (-1: no limit).
func (h *Hub) Admission() (inPlay, limit int64) {
	limit = h.admit.allowed()
	if limit == math.MaxInt64 {
		limit = -1
	}
	return h.admit.inPlay.Load(), limit
}

// allowed is the number of games that may be in play now.
func (a *admission) allowed() int64 { return min(a.limit.Load(), a.ceiling) }

// busy refuses a ticket while the server catches up, and counts it. The
// player is asked to wait longer after each refusal in a row (1, 2, 4 …
// up to 32 s, spread by ±50 %): a crowd of refused players retrying
// every second would itself be load enough to keep the server late.
func (s *Session) busy() *protocol.Error {
	s.hub.metrics.Busy.Inc()
	wait := time.Second << min(s.busyStreak, 5)
	s.busyStreak++
	e := protocol.Errf(protocol.CodeBusy, "Many players are playing right now: your ticket was not placed and nothing was debited. Trying again in a moment…")
	e.RetryMS = (wait/2 + rand.N(wait)).Milliseconds()
	return e
}

// open reports whether n more games would be admitted now (no reservation:
// building a ticket asks early, to spare Redis the work of one refused at
// confirmation).
func (a *admission) open(n int) bool {
	return a.inPlay.Load()+int64(n) <= a.allowed()
}

// take admits n games if the limit allows, counting them in play.
func (a *admission) take(n int) bool {
	if a.inPlay.Add(int64(n)) > a.allowed() {
		a.inPlay.Add(-int64(n))
		a.refused.Add(1)
		return false
	}
	return true
}

// force counts n games in play that may not be refused (resumed ones).
func (a *admission) force(n int) { a.inPlay.Add(int64(n)) }

// done counts n games finished (settled, or left for recovery).
func (a *admission) done(n int) { a.inPlay.Add(-int64(n)) }

// sent records how late a timed message went out.
func (a *admission) sent(late time.Duration) {
	a.timed.Add(1)
	count(&a.late, late, lateBy)
}

// accepted records how long a bet took to be accepted, of which wallet
// waiting on the operator's wallet (seamless mode).
func (a *admission) accepted(took, wallet time.Duration) {
	a.bets.Add(1)
	count(&a.slow, took-max(0, wallet-walletShare), slowBet)
}

// count adds d to the levels it passes: over, 2×over, 4×over.
func count(c *[levels]atomic.Int64, d, over time.Duration) {
	for i := range c {
		if d <= over<<i {
			return
		}
		c[i].Add(1)
	}
}

// severity is how far past its threshold a window's p99 went: 0 (not),
// 1, 2 (twice) or 3 (four times); too few samples say nothing.
func severity(n int64, c *[levels]atomic.Int64) int {
	sev := 0
	for i := range c {
		if k := c[i].Swap(0); n >= minEvidence && float64(k) > troubleShare*float64(n) {
			sev = i + 1
		}
	}
	return sev
}

// adjust sets the limit every window from the window's evidence, until
// ctx ends.
func (a *admission) adjust(ctx context.Context) {
	j := judge{cutGap: a.cutGap}
	Every(ctx, admitWindow, func() {
		sev := max(severity(a.timed.Swap(0), &a.late), severity(a.bets.Swap(0), &a.slow))
		inPlay := a.inPlay.Load()
		a.limit.Store(j.next(time.Now(), sev, a.limit.Load(), inPlay))
		if a.onLimit != nil {
			a.onLimit(a.allowed(), inPlay)
		}
	})
}

// judge is adjust's memory from one window to the next.
type judge struct {
	cutGap  time.Duration
	prevSev int       // the last window's severity
	lastCut time.Time // when the limit was last cut
	served  int64     // games in play in the best window on time lately (decays by 1 % a window)
}

// next is the limit after a window of severity sev: cut by the trouble
// this window and the last one share, when a cut is due (nextLimit).
func (j *judge) next(now time.Time, sev int, limit, inPlay int64) int64 {
	sustained := min(sev, j.prevSev) // one slow second alone: 0
	j.prevSev = sev
	cutBy := 0
	if sustained > 0 && now.Sub(j.lastCut) >= j.cutGap {
		cutBy, j.lastCut = sustained, now
	}
	j.served -= j.served / 100
	if sev == 0 {
		j.served = max(j.served, inPlay)
	}
	return nextLimit(limit, inPlay, cutBy, sev == 0, j.served/2)
}

// nextLimit is the limit after a window: cut (cutBy > 0) to what is in
// play (or the limit, if lower) less a tenth, a quarter or two fifths by
// severity, but not below floor (nor a limit already lower); grown by a
// tenth (at least 2) when the window was on time and the limit is what
// holds play back; otherwise unchanged.
func nextLimit(limit, inPlay int64, cutBy int, onTime bool, floor int64) int64 {
	switch {
	case cutBy > 0:
		kept := [levels + 1]int64{100, 90, 75, 60}[cutBy] // per cent, by severity
		return max(minLimit, min(limit, inPlay)*kept/100, min(floor, limit))
	case onTime && limit != math.MaxInt64 && inPlay >= limit*9/10:
		if next := limit + max(2, limit/10); next < 1<<40 {
			return next
		}
		return math.MaxInt64
	}
	return limit
}
