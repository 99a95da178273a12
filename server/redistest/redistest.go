// Package redistest starts real redis-server processes (and miniredis) for
// tests. A missing redis-server is a test failure, not a skip: `make test`
// installs it (.ci/deps).
package redistest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process on a loopback TCP port.
type Server struct {
	t    testing.TB
	Dir  string
	Port int
	Args []string
	cmd  *exec.Cmd
}

// Start runs redis-server with AOF persistence (appendfsync always) in a
// temporary directory. Extra arguments are appended to the command line.
func Start(t testing.TB, extra ...string) *Server {
	return start(t, FreePort(t), extra)
}

func start(t testing.TB, port int, extra []string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server not found: run `make deps` (installs Debian's redis-server)")
	}
	s := &Server{t: t, Dir: t.TempDir(), Args: extra}
	s.Port = port
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// clusterPort returns a free port whose cluster bus port (port + 10 000)
// is free too. It picks below the ephemeral range (32768+ on Linux), where
// the bus port always fits under 65 536 and few sockets come by chance.
func clusterPort(t testing.TB) int {
	for i := 0; i < 2000; i++ {
		port := 20000 + rand.IntN(10000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000))
		l.Close()
		if err != nil {
			continue
		}
		bus.Close()
		return port
	}
	t.Fatal("no free port pair for a cluster node")
	return 0
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *Server) start() {
	s.t.Helper()
	args := append([]string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--hash-max-listpack-value", "1024", // as production is advised to (README)
		"--daemonize", "no", "--loglevel", "warning",
	}, s.Args...)
	s.cmd = exec.Command("redis-server", args...)
	log, _ := os.Create(filepath.Join(s.Dir, "redis.log"))
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := c.Ping(context.Background()).Err(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			s.t.Fatalf("redis-server on %d did not come up: %s", s.Port, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Addr is host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.Port) }

// URL is a redis:// URL for the server.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Client returns a go-redis client closed at the end of the test.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), PoolSize: 64})
	s.t.Cleanup(func() { c.Close() })
	return c
}

// Kill stops the server with SIGKILL, as a crash would.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
	s.cmd = nil
}

// Pause freezes the server (SIGSTOP): connections stay open, nothing is
// answered — a hung Redis. Resume (SIGCONT) undoes it.
func (s *Server) Pause() { s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume lets a paused server run again.
func (s *Server) Resume() { s.cmd.Process.Signal(syscall.SIGCONT) }

// Restart starts the server again on the same port and directory; with AOF
// it comes back with every acknowledged write.
func (s *Server) Restart() { s.Kill(); s.start() }

// Stop ends the server.
func (s *Server) Stop() { s.Kill() }

// Backend is a named way to get a fresh Redis for a test.
type Backend struct {
	Name string
	New  func(t testing.TB) redis.UniversalClient
}

// Backends returns the real redis-server and miniredis, so a suite can run
// against both.
func Backends() []Backend {
	return []Backend{
		{"redis-server", func(t testing.TB) redis.UniversalClient { return Start(t).Client() }},
		{"miniredis", func(t testing.TB) redis.UniversalClient {
			m := miniredis.RunT(t)
			c := redis.NewClient(&redis.Options{Addr: m.Addr()})
			t.Cleanup(func() { c.Close() })
			return c
		}},
	}
}
