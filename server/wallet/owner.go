package wallet

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ownership: one session at a time advances a player's games. Claim hands
// out a fencing token (a per-player counter); every game-advancing script
// checks that the caller's token is the current owner, so a session that
// was taken over — on this server or another — can no longer move money.

var (
	renewScript   = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
	releaseScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	claimScript   = redis.NewScript(`
local token = tostring(redis.call('INCR', KEYS[2]))
if ARGV[2] == '1' then
  if not redis.call('SET', KEYS[1], token, 'PX', ARGV[1], 'NX') then return false end
else
  redis.call('SET', KEYS[1], token, 'PX', ARGV[1])
end
return token`)
)

// Claim makes the caller the player's owner, taking over from any current
// one, and returns the new fencing token.
func (s *Store) Claim(ctx context.Context, player string, ttl time.Duration) (string, error) {
	return s.claim(ctx, player, ttl, false)
}

// ClaimIfFree claims only when nobody owns the player ("" if owned).
func (s *Store) ClaimIfFree(ctx context.Context, player string, ttl time.Duration) (string, error) {
	return s.claim(ctx, player, ttl, true)
}

func (s *Store) claim(ctx context.Context, player string, ttl time.Duration, ifFree bool) (string, error) {
	if !ValidPlayer(player) {
		return "", ErrBadPlayer
	}
	k := keysOf(player)
	nx := "0"
	if ifFree {
		nx = "1"
	}
	cmd, err := s.eval(ctx, claimScript, []string{k.owner(), k.fence()}, ttl.Milliseconds(), nx)
	if err != nil {
		return "", err
	}
	tok, err := cmd.Text()
	if err == redis.Nil {
		return "", nil
	}
	return tok, err
}

// Renew extends the caller's ownership; false if it was lost.
func (s *Store) Renew(ctx context.Context, player, token string, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, s.rdb, []string{keysOf(player).owner()}, token, ttl.Milliseconds()).Int()
	return n == 1, err
}

// Lease names one player's ownership token.
type Lease struct{ Player, Token string }

// RenewAll renews many leases in one pipeline and returns the indexes of
// those that were lost.
func (s *Store) RenewAll(ctx context.Context, leases []Lease, ttl time.Duration) ([]int, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(leases))
	for i, l := range leases {
		cmds[i] = renewScript.EvalSha(ctx, pipe, []string{keysOf(l.Player).owner()}, l.Token, ttl.Milliseconds())
	}
	if _, err := pipe.Exec(ctx); err != nil && !redis.HasErrorPrefix(err, "NOSCRIPT") {
		return nil, err
	}
	var lost []int
	for i, c := range cmds {
		n, err := c.Int()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") { // script cache flushed (Redis restart)
			n, err = renewScript.Run(ctx, s.rdb, []string{keysOf(leases[i].Player).owner()}, leases[i].Token, ttl.Milliseconds()).Int()
		}
		if err == nil && n == 0 {
			lost = append(lost, i)
		}
	}
	return lost, nil
}

// Release gives up ownership if the caller still holds it.
func (s *Store) Release(ctx context.Context, player, token string) error {
	return releaseScript.Run(ctx, s.rdb, []string{keysOf(player).owner()}, token).Err()
}

// Owner returns the current owner token ("" if none).
func (s *Store) Owner(ctx context.Context, player string) (string, error) {
	v, err := s.rdb.Get(ctx, keysOf(player).owner()).Result()
	if err == redis.Nil {
		return "", nil
	}
	return v, err
}

// The recovery index: one sorted set of every unsettled game in the whole
// system, scored by the time after which a server may settle it with the
// default choices if its player is gone. It lives outside the players'
// slots, so it is written beside (not inside) the money scripts: the entry
// is added before the bet script runs (an entry without a game is dropped
// by the sweeper) and removed after settlement (a settled game found there
// is dropped too). Nothing is ever paid from the index alone.
const openIndex = "keno:open"

func indexMember(player, gameID string) string { return player + "/" + gameID }

// IndexOpen schedules games for recovery at the given time.
func (s *Store) IndexOpen(ctx context.Context, player string, gameIDs []string, due time.Time) error {
	z := make([]redis.Z, len(gameIDs))
	for i, id := range gameIDs {
		z[i] = redis.Z{Score: float64(due.UnixMilli()), Member: indexMember(player, id)}
	}
	// Durable before the bet: a crash must not lose the entry that lets a
	// surviving server find an abandoned game.
	var add *redis.IntCmd
	if err := s.durably(ctx, openIndex, func(pipe redis.Pipeliner) { add = pipe.ZAdd(ctx, openIndex, z...) }); err != nil {
		return err
	}
	return add.Err()
}

// Unindex removes settled games from the recovery index (one command for
// many: a stale entry is harmless, the sweeper drops it).
func (s *Store) Unindex(ctx context.Context, games ...DueGame) error {
	if len(games) == 0 {
		return nil
	}
	members := make([]any, len(games))
	for i, g := range games {
		members[i] = indexMember(g.Player, g.GameID)
	}
	return s.rdb.ZRem(ctx, openIndex, members...).Err()
}

// DueGame is an index entry whose time has come.
type DueGame struct{ Player, GameID string }

// Due lists up to max index entries due at now.
func (s *Store) Due(ctx context.Context, now time.Time, max int) ([]DueGame, error) {
	ms, err := s.rdb.ZRangeByScore(ctx, openIndex, &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(max)}).Result()
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

// OpenCount is the number of unsettled games in the whole system.
func (s *Store) OpenCount(ctx context.Context) (int64, error) {
	return s.rdb.ZCard(ctx, openIndex).Result()
}

// RecoveryCounts returns the unsettled games of the whole system and, of
// them, those due before dueBefore that no sweeper has settled yet (the
// recovery backlog), in one round trip.
func (s *Store) RecoveryCounts(ctx context.Context, dueBefore time.Time) (open, backlog int64, err error) {
	pipe := s.rdb.Pipeline()
	o := pipe.ZCard(ctx, openIndex)
	b := pipe.ZCount(ctx, openIndex, "-inf", strconv.FormatInt(dueBefore.UnixMilli(), 10))
	_, err = pipe.Exec(ctx)
	return o.Val(), b.Val(), err
}

// HoldLease takes the named cluster-wide lease for holder, or renews it if
// holder has it already; false while another holds it. (The archiver's:
// one at a time works.)
func (s *Store) HoldLease(ctx context.Context, key, holder string, ttl time.Duration) bool {
	if ok, err := s.rdb.SetNX(ctx, key, holder, ttl).Result(); err == nil && ok {
		return true
	}
	n, err := renewScript.Run(ctx, s.rdb, []string{key}, holder, ttl.Milliseconds()).Int()
	return err == nil && n == 1
}
