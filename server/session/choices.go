package session

import (
	"context"
	"errors"
	"time"

	"keno/protocol"
	"keno/server/wallet"
)

// awaiting is a decision the game goroutine waits for.
type awaiting struct {
	game string
	kind string // "continue" or "box"
	ch   chan decision
}

type decision struct {
	id   string // request id, echoed in the acknowledgement
	cont bool
	box  int
}

// expect opens the window for the player's choice of kind on game.
func (s *Session) expect(game, kind string) chan decision {
	ch := make(chan decision, 1)
	s.mu.Lock()
	s.await = &awaiting{game: game, kind: kind, ch: ch}
	s.mu.Unlock()
	return ch
}

// decide waits for the choice expected. A player who does not choose
// within DecisionTimeout of seeing the offer (shownIn from now: an offer
// sent ahead is seen at its turn) gets the default (stop, first box).
func (s *Session) decide(ch chan decision, shownIn time.Duration) (decision, bool) {
	if shownIn > 0 {
		// Sent ahead (protocol version 2): the reveal before the offer is
		// still on the player's screen, and a shutdown waits for it as it
		// waits for a reveal the server streams.
		shown := time.NewTimer(shownIn)
		select {
		case d := <-ch:
			shown.Stop()
			return d, true
		case <-shown.C:
		case <-s.ctx.Done():
			shown.Stop()
			return decision{}, false
		}
	}
	s.setPaused(true) // the offer is on screen: a shutdown may end the session here
	defer s.setPaused(false)
	timer := time.NewTimer(s.hub.cfg.DecisionTimeout)
	defer timer.Stop()
	select {
	case d := <-ch:
		return d, true
	case <-timer.C:
		s.mu.Lock()
		s.await = nil
		s.mu.Unlock()
		select {
		case d := <-ch: // the choice arrived just in time
			return d, true
		default:
			return decision{}, true
		}
	case <-s.ctx.Done():
		return decision{}, false
	}
}

func (s *Session) setPaused(p bool) {
	s.mu.Lock()
	s.paused = p
	s.mu.Unlock()
}

// decision hands a choice to the waiting game, or refuses it.
func (s *Session) decision(req *protocol.Request, kind string, d decision) {
	s.mu.Lock()
	a := s.await
	if a == nil || a.game != req.Game || a.kind != kind {
		s.mu.Unlock()
		what := map[string]string{"continue": "Stop-or-Continue", "box": "Extra"}[kind]
		s.refuse(req.ID, protocol.Errf(protocol.CodeNotYourTurn, "no %s choice is offered for game %q now", what, req.Game))
		return
	}
	s.await = nil
	s.mu.Unlock()
	a.ch <- d
}

// record makes a choice durable (journaled) before it takes effect, then
// acknowledges it.
func (s *Session) record(game, reqID string, c wallet.Choice) bool {
	ctx, cancel := context.WithTimeout(s.ctx, 15*time.Second)
	defer cancel()
	err := retryTransient(ctx, func() error {
		t0 := time.Now()
		err := s.hub.store.Choose(ctx, s.player, s.fenceToken(), game, c.Field, c.Value)
		s.hub.metrics.ObserveRedis("choose", t0, err)
		s.leaseExtended(t0, err)
		return err
	})
	switch {
	case errors.Is(err, wallet.ErrFenced):
		s.takenOver()
		return false
	case errors.Is(err, wallet.ErrAlreadyChosen):
		// Another session recorded a choice first; it stands. Reload it.
		return false
	case err != nil:
		s.fail(reqID, protocol.Errf(protocol.CodeInternal, "your choice could not be recorded; reconnect to resume the game"))
		return false
	}
	if reqID != "" {
		s.send(&protocol.Message{Type: protocol.TOk, ID: reqID, Game: game})
	}
	return true
}

func boolValue(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
