// Package ratelimit applies GCRA rate limits: shared ones in Redis through
// redis_rate (connection attempts per IP and per player — any server sees
// the same budget), and a local one for the messages of a single
// connection, which only its own server ever sees. (Bets per player are
// limited by the bet script itself, in the same round trip: wallet.Rate.)
package ratelimit

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Rules are the shared limits.
type Rules struct {
	ConnectsPerIP  redis_rate.Limit
	ConnectsPerPID redis_rate.Limit
}

// DefaultRules are generous for people and tight for scripts.
func DefaultRules() Rules {
	return Rules{
		ConnectsPerIP:  redis_rate.Limit{Rate: 30, Burst: 60, Period: time.Second},
		ConnectsPerPID: redis_rate.Limit{Rate: 5, Burst: 10, Period: time.Second},
	}
}

// Limiter checks shared limits in Redis.
type Limiter struct {
	l     *redis_rate.Limiter
	Rules Rules
}

// New returns a limiter over rdb.
func New(rdb redis.UniversalClient, rules Rules) *Limiter {
	return &Limiter{l: redis_rate.NewLimiter(rdb), Rules: rules}
}

// Allow takes one unit from key's budget; when refused it says when to retry.
// Player keys carry the player's hash tag so they live beside the wallet.
func (l *Limiter) Allow(ctx context.Context, key string, limit redis_rate.Limit) (bool, time.Duration, error) {
	if limit.Rate <= 0 {
		return true, 0, nil
	}
	res, err := l.l.Allow(ctx, key, limit)
	if err != nil {
		return false, 0, err
	}
	return res.Allowed > 0, res.RetryAfter, nil
}

// ConnectIP is the key for connection attempts from an address.
func ConnectIP(ip string) string { return "conn-ip:" + ip }

// ConnectPlayer is the key for a player's connections.
func ConnectPlayer(player string) string { return "conn:{p:" + player + "}" }

// Local is a GCRA limiter for one goroutine's use (one connection): at most
// burst messages at once, refilled at one per interval. Not thread-safe.
type Local struct {
	tat      time.Time // theoretical arrival time
	interval time.Duration
	burst    time.Duration
}

// NewLocal allows rate per second with the given burst.
func NewLocal(rate float64, burst int) *Local {
	iv := time.Duration(float64(time.Second) / rate)
	return &Local{interval: iv, burst: iv * time.Duration(burst-1)}
}

// Allow reports whether one more message may pass now, or else how long to wait.
func (g *Local) Allow(now time.Time) (bool, time.Duration) {
	tat := g.tat
	if tat.Before(now) {
		tat = now
	}
	if wait := tat.Sub(now) - g.burst; wait > 0 {
		return false, wait
	}
	g.tat = tat.Add(g.interval)
	return true, 0
}
