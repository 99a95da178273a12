package session

import (
	"time"

	"keno/protocol"
)

// pacer schedules a game's timed messages from a start instant. Those due
// by caughtUp (a resumed game's past) are sent at once; t, the scheduled
// instant, never goes backwards within a game.
//
// In version 1 each timed message is sent at its t. In version 2 (ahead)
// it is sent as soon as the game reaches it — everything up to the next
// offer leaves in one write — and the client shows it at its t: a game
// costs a few writes instead of one per ball. Only what is sent at or
// after its t can be late, so only that is measured, with the game's
// wake-up for its settlement; and the game waits for its last t before it
// is settled (wait), so that what is settled and announced is what the
// player has been shown.
type pacer struct {
	s        *Session
	ahead    bool
	start    time.Time
	caughtUp time.Time
	last     time.Time // the latest instant scheduled so far
	timer    *time.Timer
}

// restart paces what follows from a choice made at the given instant.
func (p *pacer) restart(at time.Time) {
	p.start = at
	if at.Before(p.last) {
		p.start = p.last
	}
}

// at sends m at start+offset (ahead: now, with that t), recording how late
// it went out.
func (p *pacer) at(offset time.Duration, m *protocol.Message) bool {
	when := p.start.Add(offset)
	if when.Before(p.last) {
		when = p.last
	}
	p.last = when
	m.T = when.UnixMilli()
	if when.After(p.caughtUp) {
		if !p.ahead && !p.sleep(when) {
			return false
		}
		if late := time.Since(when); !p.ahead || late >= 0 {
			p.s.hub.metrics.RevealLateness.Observe(late.Seconds())
			p.s.hub.admit.sent(late)
		}
	}
	return p.s.send(m)
}

// wait returns once everything scheduled is due (at once in version 1,
// where it was sent at its t); false if the session ended first. What
// follows — the settlement — is due then: how late the game woke for it
// is, in version 2, the lateness the server itself causes, and what the
// admission controller judges (in version 1, the messages' own).
func (p *pacer) wait() bool {
	if !p.ahead || !time.Now().Before(p.last) {
		return true // nothing left to wait for: a choice came after it all was shown
	}
	if !p.sleep(p.last) {
		return false
	}
	p.s.hub.admit.sent(time.Since(p.last))
	return true
}

// aheadBy is how long the client still has to show what was sent ahead.
func (p *pacer) aheadBy() time.Duration {
	if !p.ahead {
		return 0
	}
	return max(0, time.Until(p.last))
}

// sleep waits until the instant; false if the session ended first.
func (p *pacer) sleep(until time.Time) bool {
	d := time.Until(until)
	if d <= 0 {
		return true
	}
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-p.timer.C:
		return true
	case <-p.s.ctx.Done():
		return false
	}
}
