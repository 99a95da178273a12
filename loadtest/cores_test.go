package main

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// -redis-core splits the machine: this process (and what it starts from
// then on) off the last core, Redis on it alone, a neighbour anywhere.
func TestRedisCoreSplit(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	if before.Count() < 2 {
		t.Skip("needs 2 cores or more")
	}
	split, err := reserveRedisCore()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pin(os.Getpid(), &before) })

	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	affinity := func() unix.CPUSet {
		var s unix.CPUSet
		if err := unix.SchedGetaffinity(child.Process.Pid, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := affinity(); got != split.rest || got.IsSet(split.redis) || got.Count() != before.Count()-1 {
		t.Fatalf("a process started after the split may run on %v, want every core but %d", got, split.redis)
	}
	if err := split.pinRedis(child.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if got := affinity(); got.Count() != 1 || !got.IsSet(split.redis) {
		t.Fatalf("Redis may run on %v, want core %d alone", got, split.redis)
	}
	if err := split.unpin(child.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if got := affinity(); got != before {
		t.Fatalf("the neighbour may run on %v, want every core", got)
	}
}

func TestRedisCoreNeedsSpawnedRedis(t *testing.T) {
	c := &config{wsURL: "ws://127.0.0.1:8080/ws", admin: "http://127.0.0.1:9090", players: 1, duration: 1e9,
		strategy: "random", maxGrids: 1}
	if err := c.validate(); err != nil {
		t.Fatalf("the same config without -redis-core: %v", err)
	}
	c.redisCore = true
	if err := c.validate(); err == nil {
		t.Fatal("-redis-core without -spawn-server was accepted")
	}
}
