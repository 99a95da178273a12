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
// so the number of games in play is what loads them. adjust lowers the
// number allowed by a tenth when, over a second, more than 1 % of the timed
// messages went out late or of the bets were slow to be accepted (their
// p99 passed the server's share of the goals) — at most once per game's
// reveal, so that a cut has taken effect before the next is judged — and
// raises it by a tenth each second both are on time while the limit is
// what holds play back.
// Until the first sign of trouble there is no limit. Games being resumed are never refused: they were
// accepted before.
//
// The operator may also set a fixed ceiling (MAX_GAMES_IN_PLAY): the
// server's tested capacity, never passed whatever the evidence says.
//
// Owner: the counters are written by sessions (atomics); the limit by
// adjust alone, which Hub.Run runs.
type admission struct {
	inPlay  atomic.Int64 // games accepted and not yet finished on this server
	limit   atomic.Int64 // games allowed in play (unlimited: math.MaxInt64)
	ceiling int64        // the operator's fixed maximum (unlimited: math.MaxInt64)

	// This window's evidence, reset by adjust.
	timed, late atomic.Int64 // timed messages sent, and those later than lateBy
	bets, slow  atomic.Int64 // bets accepted, and those slower than slowBet

	refused atomic.Int64  // tickets refused busy since start (for tests; metrics count too)
	cutGap  time.Duration // between two cuts: a cut takes effect as games finish
	onLimit func(limit int64, inPlay int64)
}

const (
	admitWindow  = time.Second
	lateBy       = 15 * time.Millisecond // the server's share of the 20 ms lateness goal (the network and the client take the rest)
	slowBet      = 35 * time.Millisecond // the server's share of the 50 ms confirm goal
	troubleShare = 0.01                  // more than 1 % late or slow: the p99 is past it
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
	if late > lateBy {
		a.late.Add(1)
	}
}

// accepted records how long a bet took to be accepted.
func (a *admission) accepted(took time.Duration) {
	a.bets.Add(1)
	if took > slowBet {
		a.slow.Add(1)
	}
}

// adjust sets the limit every window from the window's evidence, until
// ctx ends.
func (a *admission) adjust(ctx context.Context) {
	var lastCut time.Time
	Every(ctx, admitWindow, func() {
		timed, late := a.timed.Swap(0), a.late.Swap(0)
		bets, slow := a.bets.Swap(0), a.slow.Swap(0)
		trouble := (timed >= minEvidence && float64(late) > troubleShare*float64(timed)) ||
			(bets >= minEvidence && float64(slow) > troubleShare*float64(bets))
		cut := trouble && time.Since(lastCut) >= a.cutGap
		if cut {
			lastCut = time.Now()
		}
		inPlay := a.inPlay.Load()
		a.limit.Store(nextLimit(a.limit.Load(), inPlay, trouble, cut))
		if a.onLimit != nil {
			a.onLimit(a.allowed(), inPlay)
		}
	})
}

// nextLimit is the limit after a window: cut to nine tenths of what is in
// play (or of the limit, if lower) on trouble, when a cut is due; grown by
// a tenth (at least 2) when on time and the limit is what holds play back;
// otherwise unchanged.
func nextLimit(limit, inPlay int64, trouble, cut bool) int64 {
	switch {
	case trouble && cut:
		return max(minLimit, min(limit, inPlay)*9/10)
	case !trouble && limit != math.MaxInt64 && inPlay >= limit*9/10:
		if next := limit + max(2, limit/10); next < 1<<40 {
			return next
		}
		return math.MaxInt64
	}
	return limit
}
