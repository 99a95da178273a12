package redisinfo_test

import (
	"context"
	"testing"

	"keno/server/redisinfo"
	"keno/server/redistest"
)

// A real Redis's INFO commandstats gives each command's calls and time;
// lines of other sections and the section header are not commands.
func TestCommandStats(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := rdb.Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rdb.Get(ctx, "k")
	stats := redisinfo.CommandStats(rdb.Info(ctx, "commandstats").Val() + "\r\n# Server\r\nredis_version:7.0.15\r\n")
	if set := stats["set"]; set[0] != 3 || set[1] < 0 {
		t.Errorf("set: %v, want 3 calls", set)
	}
	if get := stats["get"]; get[0] != 1 {
		t.Errorf("get: %v, want 1 call", get)
	}
	for name := range stats {
		if name == "redis_version" || name == "# Commandstats" || name == "" {
			t.Errorf("not a command, parsed as one: %q", name)
		}
	}
}
