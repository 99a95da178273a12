package session

import (
	"context"
	"time"

	"keno/engine"
	"keno/server/wallet"
)

// Bank moves the games' money: the Redis wallet itself (WALLET=redis), or
// the operator's wallet with Redis keeping the record (WALLET=seamless,
// package seamless).
type Bank interface {
	// Prepare readies a ticket's payment while its summary is shown
	// (seamless: its games' recovery entries, then the debit's intent), so
	// that a confirmation before until goes straight to the debit; Forget
	// undoes it for a ticket that will not be confirmed.
	Prepare(ctx context.Context, player, ticket string, games []string, total int64, until time.Time) error
	Forget(ctx context.Context, player, ticket string, games []string) error
	// PlaceBet takes a ticket's stake and records its games, or refuses it
	// whole (wallet.Store.PlaceBet's contract).
	PlaceBet(ctx context.Context, player, fence string, t wallet.Ticket) (balance int64, dup bool, err error)
	// Settle pays a game once; with last, it records the game's last
	// choice with the settlement (wallet.Store.SettleChoosing's contract).
	Settle(ctx context.Context, player, fence string, g *wallet.GameRecord, last *wallet.Choice, res engine.Result) (wallet.Settlement, error)
	// Balance reads the player's balance where the money lives, when that
	// is not Redis (false: Redis's, or unknown now).
	Balance(ctx context.Context, player string) (int64, bool)
	// Owed makes the calls the player's money still owes (seamless mode)
	// and returns how many are still owed; live: a session plays the
	// player now (its debits in flight are left to it).
	Owed(ctx context.Context, player string, live bool) (int, error)
}

// redisBank is the Redis wallet as a Bank.
type redisBank struct{ store *wallet.Store }

func (b redisBank) PlaceBet(ctx context.Context, player, fence string, t wallet.Ticket) (int64, bool, error) {
	return b.store.PlaceBet(ctx, player, fence, t)
}

func (b redisBank) Settle(ctx context.Context, player, fence string, g *wallet.GameRecord, last *wallet.Choice, res engine.Result) (wallet.Settlement, error) {
	if last != nil {
		return b.store.SettleChoosing(ctx, player, fence, g.ID, *last, res)
	}
	return b.store.Settle(ctx, player, fence, g.ID, res)
}

// Nothing to prepare: the bet itself writes its games' recovery entries.
func (redisBank) Prepare(context.Context, string, string, []string, int64, time.Time) error {
	return nil
}
func (redisBank) Forget(context.Context, string, string, []string) error { return nil }
func (redisBank) Balance(context.Context, string) (int64, bool)          { return 0, false }
func (redisBank) Owed(context.Context, string, bool) (int, error)        { return 0, nil }
