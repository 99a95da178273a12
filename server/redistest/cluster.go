package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a local Redis Cluster of real redis-server processes.
type Cluster struct {
	t     testing.TB
	Nodes []*Server // the first `masters` start as masters
}

// StartCluster starts masters × (1 + replicas) redis-server nodes in
// cluster mode (AOF on, 1 s node timeout so that a failover takes a couple
// of seconds) and joins them with redis-cli --cluster create.
func StartCluster(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatal("redis-cli not found: run `make deps` (installs Debian's redis-tools)")
	}
	c := &Cluster{t: t}
	var addrs []string
	for i := 0; i < masters*(1+replicas); i++ {
		s := start(t, clusterPort(t), []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0",
			"--appendfsync", "everysec"})
		c.Nodes = append(c.Nodes, s)
		addrs = append(addrs, s.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", fmt.Sprint(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy(30*time.Second, replicas > 0)
	return c
}

// URL is the REDIS_URL of the cluster.
func (c *Cluster) URL() string {
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// Client returns a cluster client closed at the end of the test.
func (c *Cluster) Client() *redis.ClusterClient {
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	c.t.Cleanup(func() { cl.Close() })
	return cl
}

// WaitHealthy waits until every live node reports cluster_state:ok and,
// with replicas, every master has a connected replica.
func (c *Cluster) WaitHealthy(within time.Duration, replicas bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		if c.healthy(replicas) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal("redis cluster did not become healthy")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *Cluster) healthy(replicas bool) bool {
	ctx := context.Background()
	for _, n := range c.Nodes {
		if n.cmd == nil {
			continue // stopped on purpose
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr()})
		info, err := cl.ClusterInfo(ctx).Result()
		repl, _ := cl.Info(ctx, "replication").Result()
		cl.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		if replicas && strings.Contains(repl, "role:master") && !(strings.Contains(repl, "connected_slaves:1") && strings.Contains(repl, "state=online")) {
			return false
		}
	}
	return true
}

// MasterOf returns the node that is master for key now.
func (c *Cluster) MasterOf(key string) *Server {
	c.t.Helper()
	m, err := c.Client().MasterForKey(context.Background(), key)
	if err != nil {
		c.t.Fatal(err)
	}
	addr := m.Options().Addr
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	c.t.Fatalf("no node at %s", addr)
	return nil
}
