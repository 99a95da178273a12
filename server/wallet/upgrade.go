package wallet

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Builds before this one kept the day's loss in a key of its own per day
// ({p:…}:loss:YYYYMMDD, expiring); it now lives in the account hash (lossFields).
// A server upgraded during the day must not forget the losses already
// counted that day, which the loss limit weighs: at start, today's counters
// are folded into the accounts, once, and the old keys deleted. Other
// days' counters no longer matter and expire by themselves.
const lossesFolded = "keno:upgrade:losses-in-account" // set once every counter was folded

// foldLossScript adds a player's old counter (KEYS[2]) to the day's loss
// in the account (KEYS[1]) and deletes it, in one step: run twice, it
// adds once.
var foldLossScript = redis.NewScript(`
local v = redis.call('GET', KEYS[2])
if not v then return 0 end
local a = redis.call('HMGET', KEYS[1], 'lday', 'lost')
local lost = tonumber(v)
if a[1] == ARGV[1] then lost = lost + tonumber(a[2] or '0') end
redis.call('HSET', KEYS[1], 'lday', ARGV[1], 'lost', string.format('%d', lost))
redis.call('DEL', KEYS[2])
return 1`)

// FoldDailyLosses moves today's loss counters left by earlier builds into
// the accounts, unless that was done; it returns how many it moved.
// Servers starting together may both scan: each counter is added once.
func (s *Store) FoldDailyLosses(ctx context.Context) (int, error) {
	if n, err := s.rdb.Exists(ctx, lossesFolded).Result(); err != nil || n > 0 {
		return 0, err
	}
	day := lossDay(s.Now())
	moved := 0
	err := scanKeys(ctx, s.rdb, "{p:*}:loss:"+day, func(c *redis.Client, key string) error {
		tag, _, _ := strings.Cut(key, ":loss:")
		n, err := foldLossScript.Run(ctx, c, []string{tag + ":acct", key}, day).Int()
		moved += n
		return err
	})
	if err != nil {
		return moved, err
	}
	return moved, s.rdb.Set(ctx, lossesFolded, day, 0).Err()
}
