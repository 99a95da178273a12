package wallet

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/engine"
	"keno/server/redistest"
)

// retry repeats op until it succeeds, counting its failures in failed:
// after a connection error nobody knows whether the write landed, so the
// only safe move is the same operation id again — which the scripts make
// harmless.
func retry(t *testing.T, deadline time.Time, failed *atomic.Int64, op func() error) {
	for {
		err := op()
		if err == nil {
			return
		}
		failed.Add(1)
		if time.Now().After(deadline) {
			t.Errorf("gave up: %v", err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kills the real Redis with SIGKILL in the middle of a load of bets and
// settlements, restarts it from its AOF, lets every player finish by
// retrying, then checks the books to the cent and that every game was paid
// exactly once.
func TestRedisCrashMidLoad(t *testing.T) {
	srv := redistest.Start(t)
	// No retry by the client, and one quick dial: an operation during the
	// outage fails (rather than waiting, in the dialer, for Redis to be
	// back) and is retried here, whether or not it landed.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 32, MaxRetries: -1,
		DialTimeout: 200 * time.Millisecond, DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
		ReadTimeout: time.Second, WriteTimeout: time.Second})
	defer rdb.Close()
	s := newStore(t, rdb)
	ctx := context.Background()

	const players, tickets = 16, 12
	var failed atomic.Int64
	deadline := time.Now().Add(60 * time.Second)
	var placed atomic.Int64
	crashAt := int64(players * tickets / 3)
	crashed := make(chan struct{})
	expectWin := make([]int64, players)
	expectStake := make([]int64, players)
	var wg sync.WaitGroup
	for p := 0; p < players; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			player := fmt.Sprint("crash", p)
			retry(t, deadline, &failed, func() error { _, err := s.Deposit(ctx, player, "seed", 50_000); return err })
			var fence string
			retry(t, deadline, &failed, func() (err error) { fence, err = s.Claim(ctx, player, time.Hour); return })
			for i := 0; i < tickets; i++ {
				tk := ticket(t, player, fmt.Sprintf("%s-t%d", player, i), 1+i%3, 100)
				retry(t, deadline, &failed, func() error { _, _, err := placeFair(ctx, s, player, fence, tk); return err })
				if placed.Add(1) == crashAt {
					close(crashed)
				}
				for _, g := range tk.Games {
					expectStake[p] += g.Outcome.Stake
					res, _ := engine.Default().Settle(&g.Outcome, engine.Choices{Continue: true})
					retry(t, deadline, &failed, func() error { _, err := s.Settle(ctx, player, fence, g.ID, res); return err })
					expectWin[p] += res.Win
				}
			}
		}(p)
	}
	<-crashed
	srv.Kill()
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	wg.Wait()
	if failed.Load() == 0 {
		t.Fatal("no operation failed: the crash happened outside the load")
	}
	t.Logf("%d operations failed during the outage and were retried", failed.Load())

	b := mustBooks(t, s)
	if b.Players != players || b.Deposited != players*50_000 {
		t.Fatalf("books after crash: %+v", b)
	}
	for p := 0; p < players; p++ {
		player := fmt.Sprint("crash", p)
		a, _ := s.Account(ctx, player)
		if a.Balance != 50_000-expectStake[p]+expectWin[p] {
			t.Errorf("%s: balance %d, want %d", player, a.Balance, 50_000-expectStake[p]+expectWin[p])
		}
		// Each game credited exactly once in the ledger (the journal entries' rows).
		wins := map[string]int{}
		msgs, _ := rdb.XRange(ctx, keysOf(player).journal(), "-", "+").Result()
		for _, m := range msgs {
			if m.Values["lk"] == "win" {
				wins[m.Values["lr"].(string)]++
			}
		}
		games := 0
		for i := 0; i < tickets; i++ {
			games += 1 + i%3
		}
		if len(wins) != games {
			t.Errorf("%s: %d games credited, want %d", player, len(wins), games)
		}
		for g, n := range wins {
			if n != 1 {
				t.Errorf("%s: game %s credited %d times", player, g, n)
			}
		}
		if open, _ := s.OpenGames(ctx, player); len(open) != 0 {
			t.Errorf("%s: %d games left open", player, len(open))
		}
	}
	if _, damaged, _ := s.Verify(ctx); len(damaged) != 0 {
		t.Errorf("journals damaged by the crash: %+v", damaged)
	}
}
