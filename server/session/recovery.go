package session

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"keno/server/wallet"
)

// sweep settles abandoned games: every game whose player is gone past the
// grace period (no session owns the player) is settled with the choices
// recorded so far and the defaults for the rest (Stop; first Extra box).
// Every server runs it; the ownership lease makes sure only one settles a
// given player at a time, and settlement is idempotent anyway.
func (h *Hub) sweep(ctx context.Context) {
	Every(ctx, h.cfg.SweepEvery, func() {
		if n, err := h.SweepOnce(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn().Err(err).Msg("recovery sweep")
		} else if n > 0 {
			h.log.Info().Int("games", n).Msg("recovered abandoned games")
		}
	})
}

// SweepOnce handles the games due now and returns how many it settled.
func (h *Hub) SweepOnce(ctx context.Context) (int, error) {
	due, err := h.store.Recovery().Due(ctx, time.Now(), 200)
	if err != nil {
		return 0, err
	}
	byPlayer := map[string][]string{}
	for _, d := range due {
		byPlayer[d.Player] = append(byPlayer[d.Player], d.GameID)
	}
	// Players are independent; several at once, because in seamless mode
	// each may wait on the operator's wallet (a timeout is seconds).
	var (
		g       errgroup.Group
		settled atomic.Int64
	)
	g.SetLimit(sweepParallel)
	for player, games := range byPlayer {
		g.Go(func() error {
			n, err := h.recoverPlayer(ctx, player, games)
			settled.Add(int64(n))
			return err
		})
	}
	err = g.Wait()
	return int(settled.Load()), err
}

// sweepParallel: players a sweep handles at once.
const sweepParallel = 16

func (h *Hub) recoverPlayer(ctx context.Context, player string, games []string) (int, error) {
	fence, err := h.store.ClaimIfFree(ctx, player, h.cfg.LeaseTTL)
	if err != nil {
		return 0, err
	}
	// Seamless mode: the calls the player's money owes the operator go
	// first; while any is owed, the games' entries stay (they are what
	// finds the outbox after a crash).
	if owed, err := h.bank.Owed(ctx, player, fence == ""); err != nil || owed > 0 {
		if fence != "" {
			h.store.Release(context.Background(), player, fence)
		}
		return 0, errors.Join(err, h.store.Recovery().HandOver(ctx, player, games, time.Now().Add(owedRetry)))
	}
	if fence == "" {
		// The player is connected somewhere: that session plays the game.
		// Look again after another grace period.
		return 0, h.store.Recovery().HandOver(ctx, player, games, time.Now().Add(h.cfg.Grace))
	}
	defer h.store.Release(context.Background(), player, fence)
	settled := 0
	for _, id := range games {
		g, err := h.store.Game(ctx, player, id)
		if errors.Is(err, wallet.ErrNoGame) {
			h.store.Recovery().Abandon(ctx, wallet.DueGame{Player: player, GameID: id}) // the bet never landed
			continue
		}
		if err != nil {
			return settled, err
		}
		if g.Status == "settled" {
			h.store.Recovery().Settled(ctx, wallet.DueGame{Player: player, GameID: id})
			continue
		}
		res, err := h.table.Settle(&g.Outcome, g.Choices())
		if err != nil {
			return settled, err
		}
		st, err := h.bank.Settle(ctx, player, fence, &g.GameRecord, nil, res)
		if err != nil {
			return settled, err
		}
		h.settledOrOwed(ctx, player, id, st)
		if !st.Dup {
			settled++
			h.metrics.Recovered.Inc()
			h.countSettled(player, g, res)
		}
	}
	return settled, nil
}

// owedRetry: how soon the sweep looks again at a game whose money the
// operator has not acknowledged yet (the outbox's own backoff decides
// whether a call is sent).
const owedRetry = 5 * time.Second

// settledOrOwed drops a settled game from the recovery index — unless its
// credit is still owed to the operator: then the entry falls due soon, so
// that a sweep sends the credit again even if this server dies.
func (h *Hub) settledOrOwed(ctx context.Context, player, game string, st wallet.Settlement) {
	if !st.Pending {
		h.settledLater(player, game)
		return
	}
	if err := h.store.Recovery().HandOver(context.WithoutCancel(ctx), player, []string{game}, time.Now().Add(owedRetry)); err != nil {
		h.log.Warn().Err(err).Str("game", game).Msg("schedule an owed credit (its entry stays due at the bet's time)")
	}
}

// settledLater queues a settled game's removal from the recovery index;
// flushSettled sends the queue as one command a few times a second, which
// spares a Redis round trip per game. Should the queue be full, or the
// server die first, the sweeper finds the settled game and drops it.
func (h *Hub) settledLater(player, game string) {
	select {
	case h.settledQ <- wallet.DueGame{Player: player, GameID: game}:
	default:
		h.store.Recovery().Settled(context.Background(), wallet.DueGame{Player: player, GameID: game})
	}
}

// flushSettled empties the queue every 200 ms until ctx ends, then once more.
func (h *Hub) flushSettled(ctx context.Context) {
	flush := func() {
		var batch []wallet.DueGame
		for len(batch) < 1000 {
			select {
			case g := <-h.settledQ:
				batch = append(batch, g)
				continue
			default:
			}
			break
		}
		if err := h.store.Recovery().Settled(context.Background(), batch...); err != nil {
			h.log.Warn().Err(err).Int("games", len(batch)).Msg("unindex settled games (the sweeper will)")
		}
	}
	Every(ctx, 200*time.Millisecond, flush)
	flush()
}
