package wallet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/engine"
	"keno/server/redisinfo"
	"keno/server/redistest"
)

// BenchmarkSettledBets: one op = one single-game ticket accepted (debit,
// record, journal) and settled (credit, journal), from many concurrent
// players against one local redis-server, under each way of persisting:
// appendfsync everysec (not durable: the baseline), appendfsync always
// (the durability contract on one Redis), and everysec with WAITAOF after
// each write (Redis 7.2+ only; skipped on an older one), and WAIT for one
// replica (a three-master Redis Cluster, one replica each, REDIS_REPLICA_ACKS=1).
// bets/s is end to end, and bounded by the group commit (commit.go): each
// op waits its window twice, bet and settlement, so at this parallelism
// it reads about 3 000 here however fast Redis is. Redis's own speed is
// redis-µs/script (the rate Redis alone could sustain) and each command's
// price, logged.
func BenchmarkSettledBets(b *testing.B) {
	for _, fsync := range []string{"everysec", "always", "waitaof", "replica"} {
		b.Run(fsync, func(b *testing.B) { benchSettledBets(b, fsync) })
	}
}

func benchSettledBets(b *testing.B, fsync string) {
	var (
		rdb   redis.UniversalClient
		stats func() string // INFO commandstats of the node that runs the scripts
	)
	if fsync == "replica" {
		c := redistest.StartCluster(b, 3, 1) // a cluster needs three masters
		rdb = c.Client()
		stats = func() string { return c.MasterOf("{p:x}").Client().Info(context.Background(), "commandstats").Val() }
	} else {
		appendfsync := map[string]string{"everysec": "everysec", "always": "always", "waitaof": "everysec"}[fsync]
		srv := redistest.Start(b, "--appendfsync", appendfsync)
		rdb = srv.Client()
		stats = func() string { return srv.Client().Info(context.Background(), "commandstats").Val() }
	}
	s := newStore(b, rdb)
	if fsync == "replica" {
		s.cfg.ReplicaAcks = 1
	}
	d, err := s.CheckDurability(context.Background())
	switch {
	case fsync == "everysec" && err == nil && d != WaitAOF:
		b.Fatalf("everysec passed as durable: %v", d)
	case fsync == "always" && d != FsyncAlways:
		b.Fatalf("appendfsync always: %v %v", d, err)
	case fsync == "waitaof" && d != WaitAOF:
		b.Skipf("no WAITAOF on this Redis (7.2+): %v", err)
	case fsync == "replica" && d != WaitReplicas:
		b.Fatalf("replica acks: %v %v", d, err)
	}
	s.cfg.DefaultDepositCap = 1 << 50
	ctx := context.Background()
	var nextPlayer atomic.Int64
	tab := engine.Default()
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		player := fmt.Sprint("bench", nextPlayer.Add(1))
		s.Deposit(ctx, player, "d", 1_000_000_00)
		fence, _ := s.Claim(ctx, player, time.Hour)
		src := engine.NewSecureSource()
		picks, _ := engine.ValidatePicks([]int{1, 5, 9, 13, 17, 21})
		for i := 0; pb.Next(); i++ {
			o, _ := tab.Deal(src, picks, 100)
			id := fmt.Sprintf("%s-%d", player, i)
			tk := Ticket{ID: id, Games: []GameRecord{{ID: id, Ticket: id, Grids: 1, Player: player, Outcome: o}}}
			if _, _, err := placeFair(ctx, s, player, fence, tk); err != nil {
				b.Fatal(err)
			}
			res, _ := tab.Settle(&o, engine.Choices{})
			if _, err := s.Settle(ctx, player, fence, id, res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "bets/s")
	// Redis's own time per script (bet and settle alike): the rate Redis
	// alone could sustain, for comparison with the end-to-end figure. Each
	// command's quiet price is logged beside it, to set against the load
	// tester's loaded one (README, "Longer batches, measured").
	var prices []string
	for name, c := range redisinfo.CommandStats(stats()) {
		us := float64(c[1]) / float64(max(c[0], 1))
		if name == "evalsha" {
			b.ReportMetric(us, "redis-µs/script")
		}
		prices = append(prices, fmt.Sprintf("%s %.2f", name, us))
	}
	slices.Sort(prices)
	b.Logf("Redis µs a call (INFO commandstats, b.N = %d): %s", b.N, strings.Join(prices, ", "))
}
