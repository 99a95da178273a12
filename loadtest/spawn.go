package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// spawned is what spawn started.
type spawned struct {
	dir        string // Redis's, removed at the end
	urls       []string
	redis      *exec.Cmd
	args       []string // redis-server's, to start it again
	addr       string
	serverBin  string
	servers    []*exec.Cmd
	admins     []string // the servers' admin listeners, http://…
	verifyArgs []string // more arguments of keno-server verify (the archive)
	cores      *cores   // -redis-core: Redis pinned to its own core at each start; nil: not pinned
}

// startRedis starts redis-server with s.args and waits until it listens.
func (s *spawned) startRedis() error {
	s.redis = exec.Command("redis-server", s.args...)
	s.redis.Stdout, s.redis.Stderr = os.Stderr, os.Stderr
	if err := s.redis.Start(); err != nil {
		s.redis = nil
		return fmt.Errorf("start redis-server (make deps installs it): %w", err)
	}
	if err := waitTCP(s.addr); err != nil {
		return err
	}
	if s.cores != nil { // once it listens: its threads are all started
		if err := s.cores.pinRedis(s.redis.Process.Pid); err != nil {
			return fmt.Errorf("-redis-core: pin redis-server: %w", err)
		}
	}
	return nil
}

// stop interrupts the servers, newest first, then Redis (each killed if
// still there after 15 s), and removes Redis's directory.
func (s *spawned) stop() {
	procs := append([]*exec.Cmd{}, s.servers...)
	if s.redis != nil {
		procs = append([]*exec.Cmd{s.redis}, procs...)
	}
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func(c *exec.Cmd) { c.Wait(); close(done) }(procs[i])
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			procs[i].Process.Kill()
		}
	}
	os.RemoveAll(s.dir)
}

// cpu is the CPU time (user + system) used so far by the spawned servers
// together and by the spawned Redis, read from /proc.
func (s *spawned) cpu() (servers, redis time.Duration) {
	for _, p := range s.servers {
		servers += procCPU(p.Process.Pid)
	}
	return servers, procCPU(s.redis.Process.Pid)
}

// procCPU reads utime + stime of a process from /proc/PID/stat (in clock
// ticks of 1/100 s, Linux's USER_HZ).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count fields after its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// verify runs keno-server verify on the spawned Redis: the sealed journals,
// their tails, the accounts and the stored games, and the books.
func (s *spawned) verify() (bool, string) {
	out, err := exec.Command(s.serverBin, append([]string{"verify", "-redis", "redis://" + s.addr}, s.verifyArgs...)...).CombinedOutput()
	return err == nil, strings.TrimSpace(string(out))
}

// restartServer stops server i as an orchestrator would — SIGTERM: it
// drains and tells its players to reconnect — and starts it again on the
// same ports. Its players reconnect at once (to the next server, when
// there are several): a reconnection storm.
func (s *spawned) restartServer(i int, kill bool) error {
	old := s.servers[i]
	if kill {
		old.Process.Kill() // a crash: no drain, no goodbye
	} else {
		old.Process.Signal(syscall.SIGTERM)
	}
	done := make(chan struct{})
	go func() { old.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		old.Process.Kill()
		<-done
	}
	srv := exec.Command(old.Path, old.Args[1:]...)
	srv.Stdout, srv.Stderr = os.Stderr, os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	s.servers[i] = srv
	return waitHTTP(strings.Replace(strings.TrimSuffix(s.urls[i], "/ws"), "ws://", "http://", 1) + "/readyz")
}

// killRedis SIGKILLs the spawned redis-server, as a crash would, and starts
// it again on the same port and directory (it reloads its AOF).
func (s *spawned) killRedis() error {
	s.redis.Process.Kill()
	s.redis.Wait()
	return s.startRedis()
}

// spawn starts a redis-server (AOF with the given appendfsync — always, as
// the durability contract wants in production, or everysec to measure
// what it costs; no automatic rewrite) and n keno servers with the given
// reveal profile on free loopback ports.
func spawn(serverBin string, n int, profile, fsync string, split *cores, extra ...string) (*spawned, error) {
	dir, err := os.MkdirTemp("", "keno-loadtest")
	if err != nil {
		return nil, err
	}
	redisPort := freePort()
	sp := &spawned{serverBin: serverBin, dir: dir, addr: fmt.Sprintf("127.0.0.1:%d", redisPort), cores: split}
	sp.args = []string{"--port", fmt.Sprint(redisPort), "--bind", "127.0.0.1", "--dir", dir,
		"--appendonly", "yes", "--appendfsync", fsync, "--save", "", "--loglevel", "warning", "--maxclients", "10000",
		// No automatic AOF rewrite in a bounded run: it forks and compresses
		// the whole dataset for seconds, taking one of the cores the server
		// and the load tester share here (a production Redis has its own).
		"--auto-aof-rewrite-percentage", "0",
		// As production is advised to (README, Running in production): a
		// game's hash holds its record and result, longer than Redis's
		// default 64-byte limit for the compact encoding.
		"--hash-max-listpack-value", "1024",
		// Redis's own record of its stalls (fsync, commands, the event
		// loop) over 20 ms, printed in the report (LATENCY LATEST).
		"--latency-monitor-threshold", "20"}
	if err := sp.startRedis(); err != nil {
		sp.stop()
		return nil, err
	}
	for i := 0; i < n; i++ {
		addr, admin := fmt.Sprintf("127.0.0.1:%d", freePort()), fmt.Sprintf("127.0.0.1:%d", freePort())
		srv := exec.Command(serverBin, "serve", "-mode", "dev", "-profile", profile, "-addr", addr, "-admin-addr", admin,
			"-redis", "redis://"+sp.addr, "-log", "json", "-log-level", "warn", "-conn-rate-ip", "0",
			"-server-id", fmt.Sprintf("load-%d", i))
		srv.Args = append(srv.Args, extra...)
		// GOMAXPROCS stays the runtime's own (the cores). Twice as many Ps
		// was tried: it made a collection's mark worker take one P in four
		// rather than one in two, but four busy server threads then crowd
		// Redis's one on two cores; at 10 000 players confirm p99 was
		// 50–284 ms in three runs of three, against 32–44 ms in seven runs
		// of eleven with two (the other four, in a slow hour, 101–165 ms).
		srv.Stdout, srv.Stderr = os.Stderr, os.Stderr
		if err := srv.Start(); err != nil {
			sp.stop()
			return nil, err
		}
		sp.servers = append(sp.servers, srv)
		if err := waitHTTP("http://" + addr + "/readyz"); err != nil {
			sp.stop()
			return nil, err
		}
		sp.urls = append(sp.urls, "ws://"+addr+"/ws")
		sp.admins = append(sp.admins, "http://"+admin)
	}
	fmt.Fprintf(os.Stderr, "spawned redis-server :%d (appendfsync %s) and %d server(s): %s; cores: %s\n", redisPort, fsync, n, strings.Join(sp.urls, ", "), split)
	return sp, nil
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitTCP(addr string) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("%s did not come up", addr)
}

func waitHTTP(url string) error {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
	}
	return fmt.Errorf("%s did not become ready", url)
}
