package session

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"keno/protocol"
	"keno/server/wallet"
)

// keepLeases renews the ownership lease of every local session until ctx
// ends. Sessions are spread over leaseSlots slots renewed in turn, so that
// Redis sees a steady trickle of small pipelines rather than one burst of
// every player at once. A session whose lease was taken (its player
// connected elsewhere, or it stalled past the TTL) is ended.
func (h *Hub) keepLeases(ctx context.Context) {
	const leaseSlots = 64
	slot := 0
	Every(ctx, h.cfg.LeaseTTL/3/leaseSlots, func() {
		slot = (slot + 1) % leaseSlots
		// A session whose bet, choice or settlement extended its lease
		// lately needs no renewal: its lease runs past the next round.
		recent := time.Now().Add(-h.cfg.LeaseTTL / 3).UnixMilli()
		sessions := h.reg.players(func(s *Session) bool { return s.leaseSlot%leaseSlots == slot && s.extended.Load() < recent })
		leases := make([]wallet.Lease, len(sessions))
		for i, s := range sessions {
			leases[i] = wallet.Lease{Player: s.player, Token: s.fenceToken()}
		}
		lost, err := h.store.RenewAll(ctx, leases, h.cfg.LeaseTTL)
		if err != nil {
			h.log.Warn().Err(err).Msg("renew leases")
			return
		}
		for _, i := range lost {
			go sessions[i].leaseLost()
		}
	})
}

// listenTakeovers ends local sessions when their player connects to another
// server. It runs until ctx ends.
func (h *Hub) listenTakeovers(ctx context.Context) {
	ch := h.store.Subscribe(ctx, wallet.TakeoverChannel, 1024)
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			player, tok, _ := strings.Cut(m.Payload, "|")
			fence, _ := strconv.ParseInt(tok, 10, 64)
			if s := h.reg.session(player); s != nil && s.fence.Load() < fence { // only a newer claim takes over
				s.takenOver()
			}
		}
	}
}

// leaseLost handles a lease that could not be renewed. A takeover by
// another connection is announced (ListenTakeovers), so this is a lapse —
// Redis was unreachable or restarted — and nobody else plays for the
// player: the session claims the lease again and goes on. If someone does
// own it now, the session cannot go on safely; the player is told that the
// server had a problem and to reconnect, which is not a takeover.
func (s *Session) leaseLost() {
	if !s.reclaiming.CompareAndSwap(false, true) {
		return // the keeper's next round found it lost again: one reclaim at a time
	}
	defer s.reclaiming.Store(false)
	s.mu.Lock()
	gone := s.replaced
	s.mu.Unlock()
	if gone || s.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	tok, err := s.hub.store.ClaimIfFree(ctx, s.player, s.hub.cfg.LeaseTTL)
	if err == nil && tok != "" {
		s.setFence(tok)
		s.log().Warn().Msg("lease had lapsed; claimed again")
		return
	}
	s.log().Warn().Err(err).Msg("lease lost to another owner; closing the session")
	s.mu.Lock()
	s.replaced = true // the lease is not ours: cleanup must not release it
	s.mu.Unlock()
	s.end(&protocol.Message{Type: protocol.TError, Error: protocol.Errf(protocol.CodeServerProblem,
		"The connection to your game was interrupted by a problem on our side. Reconnect: your games are safe and resume where they were.")},
		websocket.StatusTryAgainLater, "lease lost")
}

// leaseExtended notes that a money operation begun at t0 extended the
// lease (the scripts do, for the owner), unless it failed.
func (s *Session) leaseExtended(t0 time.Time, err error) {
	if err == nil {
		s.extended.Store(t0.UnixMilli())
	}
}

func (s *Session) setFence(tok string) {
	n, _ := strconv.ParseInt(tok, 10, 64)
	s.fence.Store(n)
}

func (s *Session) fenceToken() string { return strconv.FormatInt(s.fence.Load(), 10) }
