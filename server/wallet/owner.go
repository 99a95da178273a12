package wallet

import (
	"context"
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
