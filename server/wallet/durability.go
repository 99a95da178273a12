package wallet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"keno/server/redisinfo"
)

// The durability contract: nothing is acknowledged to anyone — a bet's
// "accepted", a settlement, a choice's "ok", a cashier 200 — before the
// write is durable by the deployment's declared rule:
//
//   - replicated Redis or Redis Cluster (ReplicaAcks > 0): WAIT for that
//     many replicas after each money write, so a failover cannot lose it;
//   - one Redis with appendfsync always: Redis writes and fsyncs its AOF
//     before it answers (it groups the writes of one event-loop turn, of
//     every client, into one fsync: group commit comes with it);
//   - one Redis 7.2+ with any other appendfsync: WAITAOF 1 0 after each
//     money write waits for the local fsync.
//
// With appendfsync everysec and nothing else, Redis may postpone the AOF
// write() by up to 2 s while a background fsync is in flight and still
// answer clients: acknowledged bets and payouts can vanish in a crash of
// the Redis process alone. Production refuses to start with that.

// Durability is how the store makes each money write durable.
type Durability int

const (
	NotDurable   Durability = iota // dev only: nothing waited for
	FsyncAlways                    // appendfsync always on every master
	WaitAOF                        // WAITAOF 1 0 after each money write
	WaitReplicas                   // WAIT ReplicaAcks after each money write
)

func (d Durability) String() string {
	return [...]string{"not durable", "appendfsync always", "WAITAOF (local fsync)", "WAIT (replicas)"}[d]
}

// ErrNotDurable: a write was made but not confirmed durable in time. It
// may or may not survive a crash, so the caller must retry the same
// (idempotent) operation before telling anyone it is done.
var ErrNotDurable = errors.New("wallet: write not confirmed durable in time; retry")

// persistence is one master's AOF settings as CONFIG GET and INFO report them.
type persistence struct {
	appendonly, appendfsync string
	waitaof                 bool // the server has WAITAOF (Redis 7.2+)
	err                     error
}

// CheckDurability inspects every master's persistence settings and chooses how
// money writes are made durable (see the contract above). It returns an
// error naming the setting when no rule can be kept; dev mode may go on
// with NotDurable after logging that error.
func (s *Store) CheckDurability(ctx context.Context) (Durability, error) {
	if s.cfg.ReplicaAcks > 0 {
		s.durability = WaitReplicas
		return WaitReplicas, nil
	}
	var (
		mu    sync.Mutex
		nodes []persistence
	)
	err := forEachNode(ctx, s.rdb, func(ctx context.Context, c *redis.Client) error {
		p := readPersistence(ctx, c)
		mu.Lock()
		nodes = append(nodes, p)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return NotDurable, err
	}
	d := FsyncAlways
	for _, p := range nodes {
		switch {
		case p.err == nil && p.appendonly == "yes" && p.appendfsync == "always":
		case p.waitaof && (p.err != nil || p.appendonly == "yes"):
			d = WaitAOF // enforced per write, whatever the settings say
		case p.err != nil:
			return NotDurable, fmt.Errorf("Redis persistence cannot be read (%v) and this Redis has no WAITAOF: "+
				"set REDIS_REPLICA_ACKS for a replicated Redis, or allow CONFIG GET and use appendonly yes with appendfsync always", p.err)
		case p.appendonly != "yes":
			return NotDurable, fmt.Errorf("Redis has appendonly %s: acknowledged money would be lost at a restart; "+
				"set appendonly yes and appendfsync always (or REDIS_REPLICA_ACKS for a replicated Redis)", p.appendonly)
		default:
			return NotDurable, fmt.Errorf("Redis has appendfsync %s and no WAITAOF (Redis < 7.2): acknowledged money can be lost "+
				"when Redis crashes; set appendfsync always (or REDIS_REPLICA_ACKS for a replicated Redis)", p.appendfsync)
		}
	}
	s.durability = d
	return d, nil
}

func readPersistence(ctx context.Context, c *redis.Client) persistence {
	var p persistence
	if v, err := c.Info(ctx, "server").Result(); err == nil {
		p.waitaof = versionAtLeast(redisinfo.Fields(v)["redis_version"], 7, 2)
	}
	cfg, err := c.ConfigGet(ctx, "append*").Result()
	if err != nil {
		p.err = err
		return p
	}
	p.appendonly, p.appendfsync = cfg["appendonly"], cfg["appendfsync"]
	if p.appendonly == "" {
		p.err = errors.New("CONFIG GET returned no appendonly")
	}
	return p
}

func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	return err1 == nil && err2 == nil && (ma > major || ma == major && mi >= minor)
}

// waits reports whether money writes are followed by a durability wait.
func (s *Store) waits() bool { return s.cfg.ReplicaAcks > 0 || s.durability == WaitAOF }

// withWait sends what queue adds, then the durability wait (WAIT or
// WAITAOF), in one pipeline on node — both only cover the writes of their
// own connection — and reports whether the writes are durable.
func (s *Store) withWait(ctx context.Context, node redis.Cmdable, queue func(redis.Pipeliner)) bool {
	pipe := node.Pipeline()
	queue(pipe)
	timeout := s.cfg.ReplicaTimeout.Milliseconds()
	if s.cfg.ReplicaAcks == 0 { // WaitAOF
		w := pipe.Do(ctx, "WAITAOF", 1, 0, timeout)
		pipe.Exec(ctx)
		acks, _ := w.Slice()
		return len(acks) == 2 && acks[0] == int64(1)
	}
	w := pipe.Do(ctx, "WAIT", s.cfg.ReplicaAcks, timeout)
	pipe.Exec(ctx)
	n, _ := w.Int()
	return n >= s.cfg.ReplicaAcks
}
