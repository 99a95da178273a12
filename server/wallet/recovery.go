package wallet

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Recovery is the recovery index: one sorted set of the games of the whole
// system that a server other than the one playing them may have to
// settle, scored by the time after which any server may settle them with
// the default choices if their player is gone.
//
// Its invariant: every game whose bet may have landed and that is not yet
// settled has an entry — in seamless mode, also every game whose ticket's
// debit may be in flight and every settled game whose credit the operator
// has not acknowledged (the index is what finds a player's outbox after a
// crash; outbox.go). An entry without such a game is harmless: the sweep
// drops it (nothing is ever paid from the index alone). Hence the
// transitions, each a method:
//
//   - Reserve, with the bet or before it: the bet script writes its games'
//     entries itself where the index shares the player's Redis (Ticket.Due),
//     just before it in a Cluster; in seamless mode they are written with
//     the debit's intent, before the debit, so that a crash between the
//     debit and anything else still leaves the game (and its outbox)
//     findable — durably, like the bet;
//   - Abandon, when a ticket's bet is known not to have landed;
//   - HandOver, when the player leaves with games open: due after the
//     grace period (and again, when a sweep finds the player back);
//   - Settled, once the game is paid (batched by the caller: a stale
//     entry costs only a sweep's look).
//
// The index lives outside the players' hash slots, so in a Cluster it is
// written beside (not inside) the money scripts.
type Recovery struct{ s *Store }

const openIndex = "keno:open"

// Recovery returns the recovery index.
func (s *Store) Recovery() Recovery { return Recovery{s} }

// DueGame is an index entry.
type DueGame struct{ Player, GameID string }

func indexMember(player, gameID string) string { return player + "/" + gameID }

// Reserve enters a ticket's games before its bet, due at due.
func (r Recovery) Reserve(ctx context.Context, player string, gameIDs []string, due time.Time) error {
	return r.schedule(ctx, player, gameIDs, due)
}

// HandOver makes open games due for any server at due (the player left,
// or is still away).
func (r Recovery) HandOver(ctx context.Context, player string, gameIDs []string, due time.Time) error {
	return r.schedule(ctx, player, gameIDs, due)
}

func (r Recovery) schedule(ctx context.Context, player string, gameIDs []string, due time.Time) error {
	z := make([]redis.Z, len(gameIDs))
	for i, id := range gameIDs {
		z[i] = redis.Z{Score: float64(due.UnixMilli()), Member: indexMember(player, id)}
	}
	var add *redis.IntCmd
	if err := r.s.durably(ctx, openIndex, func(pipe redis.Pipeliner) { add = pipe.ZAdd(ctx, openIndex, z...) }); err != nil {
		return err
	}
	return add.Err()
}

// Abandon removes the entries of games whose bet did not land.
func (r Recovery) Abandon(ctx context.Context, games ...DueGame) error { return r.remove(ctx, games) }

// Settled removes the entries of settled games (one command for many).
func (r Recovery) Settled(ctx context.Context, games ...DueGame) error { return r.remove(ctx, games) }

func (r Recovery) remove(ctx context.Context, games []DueGame) error {
	if len(games) == 0 {
		return nil
	}
	members := make([]any, len(games))
	for i, g := range games {
		members[i] = indexMember(g.Player, g.GameID)
	}
	return r.s.rdb.ZRem(ctx, openIndex, members...).Err()
}

// Due lists up to max entries due at now.
func (r Recovery) Due(ctx context.Context, now time.Time, max int) ([]DueGame, error) {
	ms, err := r.s.rdb.ZRangeByScore(ctx, openIndex, &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(max)}).Result()
	if err != nil {
		return nil, err
	}
	out := make([]DueGame, 0, len(ms))
	for _, m := range ms {
		if player, game, ok := strings.Cut(m, "/"); ok {
			out = append(out, DueGame{player, game})
		}
	}
	return out, nil
}

// Count is the number of entries: the unsettled games of the whole system.
func (r Recovery) Count(ctx context.Context) (int64, error) {
	return r.s.rdb.ZCard(ctx, openIndex).Result()
}

// Counts returns the entries and, of them, those due before dueBefore that
// no sweep has settled yet (the recovery backlog), in one round trip.
func (r Recovery) Counts(ctx context.Context, dueBefore time.Time) (open, backlog int64, err error) {
	pipe := r.s.rdb.Pipeline()
	o := pipe.ZCard(ctx, openIndex)
	b := pipe.ZCount(ctx, openIndex, "-inf", strconv.FormatInt(dueBefore.UnixMilli(), 10))
	_, err = pipe.Exec(ctx)
	return o.Val(), b.Val(), err
}
