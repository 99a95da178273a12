package redisinfo_test

import (
	"context"
	"strings"
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

// INFO's fields read as Redis set them: the maxmemory just configured, the
// server's version; section headers are not fields.
func TestFields(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "maxmemory", "12345678").Err(); err != nil {
		t.Fatal(err)
	}
	f := redisinfo.Fields(rdb.Info(ctx, "server", "memory").Val())
	if got := f["maxmemory"]; got != "12345678" {
		t.Errorf("maxmemory %q, want 12345678", got)
	}
	if v := f["redis_version"]; len(v) < 5 || v[1] != '.' && v[2] != '.' {
		t.Errorf("redis_version %q is not a version", v)
	}
	for k := range f {
		if k == "" || k[0] == '#' || strings.ContainsAny(k, "\r\n") {
			t.Errorf("not a field, parsed as one: %q", k)
		}
	}
}
