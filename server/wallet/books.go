package wallet

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"keno/server/journal"
)

// Books sums every account in the store.
type Books struct {
	Players    int      `json:"players"`
	Balances   int64    `json:"balances"`
	House      int64    `json:"house"`
	Deposited  int64    `json:"deposited"`
	Withdrawn  int64    `json:"withdrawn"`
	Unbalanced []string `json:"unbalanced,omitempty"` // players whose own books do not hold
}

// Balanced: Σ balances + house = Σ deposits − Σ withdrawals, and every
// player's own account holds.
func (b Books) Balanced() bool {
	return len(b.Unbalanced) == 0 && b.Balances+b.House == b.Deposited-b.Withdrawn
}

// forEachNode runs fn on every master of a cluster, or on the one server.
func forEachNode(ctx context.Context, rdb redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.ForEachMaster(ctx, fn)
	}
	if c, ok := rdb.(*redis.Client); ok {
		return fn(ctx, c)
	}
	return nil
}

// scanKeys calls fn for every key matching pattern on every node. Masters
// are scanned concurrently, but fn is called one key at a time.
func scanKeys(ctx context.Context, rdb redis.UniversalClient, pattern string, fn func(c *redis.Client, key string) error) error {
	var mu sync.Mutex
	return forEachNode(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			err := fn(c, it.Val())
			mu.Unlock()
			if err != nil {
				return err
			}
		}
		return it.Err()
	})
}

// Books scans all accounts (an audit tool, not a hot path).
func (s *Store) Books(ctx context.Context) (Books, error) {
	var b Books
	err := scanKeys(ctx, s.rdb, "{p:*}:acct", func(c *redis.Client, key string) error {
		a, err := readAccount(ctx, c, key)
		if err != nil {
			return err
		}
		b.Players++
		b.Balances += a.Balance
		b.House += a.House
		b.Deposited += a.Deposited
		b.Withdrawn += a.Withdrawn
		if !a.Balanced() {
			b.Unbalanced = append(b.Unbalanced, playerOf(key))
		}
		return nil
	})
	return b, err
}

func playerOf(key string) string {
	key = strings.TrimPrefix(key, "{p:")
	if i := strings.IndexByte(key, '}'); i >= 0 {
		return key[:i]
	}
	return key
}

// Journal reads a player's whole sealed journal in stored order.
func (s *Store) Journal(ctx context.Context, player string) ([]journal.Entry, error) {
	return readJournal(ctx, s.rdb, keysOf(player).journal())
}

func readJournal(ctx context.Context, c redis.Cmdable, key string) ([]journal.Entry, error) {
	msgs, err := c.XRange(ctx, key, "-", "+").Result()
	if err != nil {
		return nil, err
	}
	out := make([]journal.Entry, len(msgs))
	prev := ""
	for i, m := range msgs {
		out[i] = hotEntry(m, prev).Entry
		prev = out[i].Hash
	}
	return out, nil
}

// JournalReport is the verification of one player: the journal and
// everything stored beside it (see Verify).
type JournalReport struct {
	Player   string
	Entries  int
	Problems []journal.Problem
}
