package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// cores is how -redis-core splits the machine: the spawned Redis alone on
// one core, the servers and the load tester on the rest, and a -hog
// neighbour free to run anywhere, as another program on the host would.
// What it measures is Redis's cost where it does not share its core — a
// production Redis runs on a host of its own — beside the default run,
// where the three share every core and each one's caches, wake-ups and
// context switches cost the others too.
type cores struct {
	redis int         // the core Redis is pinned to
	all   unix.CPUSet // every core this process could use before
	rest  unix.CPUSet // the servers' and the load tester's
}

// reserveRedisCore keeps this process — and so every process it starts
// from now on, which inherits the mask — off its last core, and returns
// the split. Each of the process's threads is moved: an affinity is a
// thread's, and a child inherits the mask of the thread that forked it.
func reserveRedisCore() (*cores, error) {
	c := &cores{}
	if err := unix.SchedGetaffinity(0, &c.all); err != nil {
		return nil, fmt.Errorf("-redis-core: read this process's cores: %w", err)
	}
	if c.all.Count() < 2 {
		return nil, fmt.Errorf("-redis-core needs 2 cores or more; this process has %d", c.all.Count())
	}
	for i := 0; i < len(c.all)*64; i++ { // the last core it may use
		if c.all.IsSet(i) {
			c.redis = i
		}
	}
	c.rest = c.all
	c.rest.Clear(c.redis)
	if err := pin(os.Getpid(), &c.rest); err != nil {
		return nil, fmt.Errorf("-redis-core: keep the load tester off core %d: %w", c.redis, err)
	}
	return c, nil
}

// pinRedis puts every thread of the Redis process on Redis's core.
func (c *cores) pinRedis(pid int) error {
	var one unix.CPUSet
	one.Set(c.redis)
	return pin(pid, &one)
}

// unpin lets a process run on every core again (the -hog neighbour).
func (c *cores) unpin(pid int) error { return pin(pid, &c.all) }

// String names the split for the report.
func (c *cores) String() string {
	if c == nil {
		return "shared"
	}
	return fmt.Sprintf("Redis alone on core %d, servers and load tester on the other %d", c.redis, c.rest.Count())
}

// pin sets the affinity of each thread of process pid.
func pin(pid int, set *unix.CPUSet) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that ended since the listing is no error.
		if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
			return err
		}
	}
	return nil
}
