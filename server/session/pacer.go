package session

import (
	"time"

	"keno/protocol"
)

// pacer schedules a game's timed messages from a start instant. Those due
// by caughtUp (a resumed game's past) are sent at once; t, the scheduled
// instant, never goes backwards within a game.
type pacer struct {
	s        *Session
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

// at sends m at start+offset, recording how late it went out.
func (p *pacer) at(offset time.Duration, m *protocol.Message) bool {
	when := p.start.Add(offset)
	if when.Before(p.last) {
		when = p.last
	}
	p.last = when
	m.T = when.UnixMilli()
	if when.After(p.caughtUp) {
		if d := time.Until(when); d > 0 {
			if p.timer == nil {
				p.timer = time.NewTimer(d)
			} else {
				p.timer.Reset(d)
			}
			select {
			case <-p.timer.C:
			case <-p.s.ctx.Done():
				return false
			}
		}
		late := time.Since(when)
		p.s.hub.metrics.RevealLateness.Observe(late.Seconds())
		p.s.hub.admit.sent(late)
	}
	return p.s.send(m)
}
