package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"keno/server/redistest"
)

func TestLocalGCRA(t *testing.T) {
	g := NewLocal(10, 3) // 10/s, burst 3
	now := time.Unix(1000, 0)
	for i := 0; i < 3; i++ {
		if ok, _ := g.Allow(now); !ok {
			t.Fatalf("burst message %d refused", i)
		}
	}
	ok, wait := g.Allow(now)
	if ok || wait <= 0 || wait > 100*time.Millisecond {
		t.Fatalf("4th message at once: ok=%v wait=%v", ok, wait)
	}
	if ok, _ := g.Allow(now.Add(wait)); !ok {
		t.Fatal("refused after waiting the advised time")
	}
}

func TestSharedLimitAcrossClients(t *testing.T) {
	srv := redistest.Start(t)
	a, b := New(srv.Client(), DefaultRules()), New(srv.Client(), DefaultRules())
	lim := redis_rate.Limit{Rate: 2, Burst: 2, Period: time.Minute}
	ctx := context.Background()
	okA, _, _ := a.Allow(ctx, ConnectPlayer("zoe"), lim)
	okB, _, _ := b.Allow(ctx, ConnectPlayer("zoe"), lim)
	okA2, retry, err := a.Allow(ctx, ConnectPlayer("zoe"), lim)
	if err != nil || !okA || !okB || okA2 || retry <= 0 {
		t.Fatalf("two servers share one budget: %v %v %v retry=%v err=%v", okA, okB, okA2, retry, err)
	}
	if ok, _, _ := a.Allow(ctx, ConnectPlayer("other"), lim); !ok {
		t.Fatal("another player's budget was used")
	}
}
