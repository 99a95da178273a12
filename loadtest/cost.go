package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/server/redisinfo"
)

// Cost goals per game (ms of CPU), the issue's: Redis is the tier every
// server shares, so its cost per game is what scale-out costs.
const (
	goalServerMS = 0.55
	goalRedisMS  = 0.15
	goalTesterMS = 0.40
)

// RedisCommands is what INFO commandstats says Redis did per game during
// the run: calls and microseconds of each command, divided by the games.
type RedisCommands struct {
	CallsPerGame map[string]float64 `json:"calls_per_game"`
	UsecPerCall  map[string]float64 `json:"usec_per_call"`
	UsecPerGame  float64            `json:"usec_per_game"`
}

// commandStats reads INFO commandstats: calls and usec by command.
func commandStats(addr string) map[string][2]int64 {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil
	}
	return redisinfo.CommandStats(info)
}

// perGame is the difference of two commandstats samples per game.
func perGame(before, after map[string][2]int64, games int64) *RedisCommands {
	if after == nil || games == 0 {
		return nil
	}
	rc := &RedisCommands{CallsPerGame: map[string]float64{}, UsecPerCall: map[string]float64{}}
	for name, a := range after {
		b := before[name]
		calls, usec := a[0]-b[0], a[1]-b[1]
		if calls <= 0 {
			continue
		}
		rc.CallsPerGame[name] = float64(calls) / float64(games)
		rc.UsecPerCall[name] = float64(usec) / float64(calls)
		rc.UsecPerGame += float64(usec) / float64(games)
	}
	return rc
}

func (rc *RedisCommands) String() string {
	names := make([]string, 0, len(rc.CallsPerGame))
	for n := range rc.CallsPerGame {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		return rc.CallsPerGame[names[i]]*rc.UsecPerCall[names[i]] > rc.CallsPerGame[names[j]]*rc.UsecPerCall[names[j]]
	})
	var parts []string
	for _, n := range names {
		if rc.CallsPerGame[n] < 0.01 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.2f×%.1f µs", n, rc.CallsPerGame[n], rc.UsecPerCall[n]))
	}
	return fmt.Sprintf("%.0f µs of commands per game: %s", rc.UsecPerGame, strings.Join(parts, ", "))
}

// startHog runs a neighbour that keeps share of one core busy (a child
// process of this binary: its CPU is not the tester's, and the scheduler
// treats it as any other program on the host). The function returned
// stops it. With a -redis-core split it may run on every core, Redis's too.
func startHog(share float64, split *cores) (func(), error) {
	if share <= 0 {
		return func() {}, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-hog-child", strconv.FormatFloat(share, 'f', 3, 64))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if split != nil {
		if err := split.unpin(cmd.Process.Pid); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("-hog: let the neighbour run on every core: %w", err)
		}
	}
	return func() { cmd.Process.Kill(); cmd.Wait() }, nil
}

// hog spins for share of every 10 ms and sleeps the rest, forever.
func hog(share float64) {
	const period = 10 * time.Millisecond
	busy := time.Duration(float64(period) * share)
	for {
		start := time.Now()
		for time.Since(start) < busy {
		}
		time.Sleep(period - busy)
	}
}

// profileServer saves 20 s of the server's CPU profile, taken once the ramp
// is over, to file, and of its allocations to file + ".allocs".
func profileServer(ctx context.Context, admin string, after time.Duration, file string) {
	select {
	case <-time.After(after):
	case <-ctx.Done():
		return
	}
	done := make(chan struct{})
	go func() { fetchProfile(admin+"/debug/pprof/allocs?seconds=20", file+".allocs"); close(done) }()
	fetchProfile(admin+"/debug/pprof/profile?seconds=20", file)
	<-done
}

func fetchProfile(url, file string) {
	resp, err := http.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keno-loadtest: server profile:", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keno-loadtest: server profile:", err)
		return
	}
	defer f.Close()
	io.Copy(f, resp.Body)
}

// redisStalls is Redis's LATENCY LATEST: for each kind of event that took
// over the monitor's threshold, how many ms the latest and the worst took,
// and (LATENCY HISTORY: at most one sample a second, the last 160 kept) in
// how many seconds and for how long in all. An fsync stall holds every
// server's money writes: they show in confirm→accept whatever the servers do.
func redisStalls(addr string) string {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rows, err := rdb.Do(ctx, "LATENCY", "LATEST").Slice()
	if err != nil || len(rows) == 0 {
		return "none over 20 ms"
	}
	var parts []string
	for _, r := range rows {
		if f, ok := r.([]any); ok && len(f) >= 4 {
			seconds, total := 0, int64(0)
			hist, _ := rdb.Do(ctx, "LATENCY", "HISTORY", f[0]).Slice()
			for _, h := range hist {
				if e, ok := h.([]any); ok && len(e) == 2 {
					ms, _ := e[1].(int64)
					seconds, total = seconds+1, total+ms
				}
			}
			parts = append(parts, fmt.Sprintf("%v: latest %v ms, worst %v ms, in %d s (%d ms in all)", f[0], f[2], f[3], seconds, total))
		}
	}
	return strings.Join(parts, "; ")
}

// steadyCost is the cost per game in steady play: between two samples
// taken once the ramp is over and the load has settled, and a little
// before the players stop. The ramp's connections, logins and deposits
// and the last tickets' drain are work without games: over the whole run
// they weigh on the figure by how long the ramp is, not by what a game
// costs (the goals are for steady play).
type steadyCost struct {
	From, To float64            // seconds since the active players' ramp began
	Games    int64              // settled by the servers in the window
	CPU      map[string]float64 // ms per game: servers, redis (when spawned), tester
	Redis    *RedisCommands     // INFO commandstats per game (when spawned)
}

// costSample is what the window's ends read.
type costSample struct {
	cpu   cpuSample
	games int64 // settled so far, by the servers' /metrics
	cmds  map[string][2]int64
}

func (c *config) costNow() costSample {
	s := costSample{cpu: c.cpuNow(), games: settledGames(c.admins)}
	for _, pid := range c.childPIDs { // running: not yet in RUSAGE_CHILDREN
		s.cpu.tester += procCPU(pid)
	}
	if c.redisAddr != "" {
		s.cmds = commandStats(c.redisAddr)
	}
	return s
}

// watchSteady starts measuring the steady-play window as the active
// players' ramp begins: from the ramp's end plus a sixth of the run (at
// least 5 s) to 2 s before the players stop. The function returned waits
// for the window's end; it gives nil if the run is too short for a window
// of 10 s, if it was cut short, or if the servers' games cannot be read.
func (c *config) watchSteady(ctx context.Context) func() *steadyCost {
	from := c.ramp + max(5*time.Second, c.duration/6)
	to := c.ramp + c.duration - 2*time.Second
	if to-from < 10*time.Second {
		return func() *steadyCost { return nil }
	}
	start := time.Now()
	done := make(chan *steadyCost, 1)
	go func() {
		at := func(d time.Duration) bool {
			select {
			case <-time.After(time.Until(start.Add(d))):
				return true
			case <-ctx.Done():
				return false
			}
		}
		if !at(from) {
			done <- nil
			return
		}
		a := c.costNow()
		if !at(to) {
			done <- nil
			return
		}
		b := c.costNow()
		games := b.games - a.games
		if games <= 0 {
			done <- nil
			return
		}
		s := &steadyCost{From: from.Seconds(), To: to.Seconds(), Games: games, CPU: b.cpu.since(a.cpu, games)}
		if a.cmds != nil {
			s.Redis = perGame(a.cmds, b.cmds, games)
		}
		done <- s
	}()
	return func() *steadyCost { return <-done }
}

// settledGames sums keno_games_settled_total over the servers' /metrics
// (0 if none answers).
func settledGames(admins []string) int64 {
	var n float64
	for _, base := range admins {
		eachMetric(base, func(name string, v float64) {
			if name == "keno_games_settled_total" || strings.HasPrefix(name, "keno_games_settled_total{") {
				n += v
			}
		})
	}
	return int64(n)
}

// eachMetric calls fn with each sample of a server's /metrics (its name
// with labels, and value); nothing if the server does not answer.
func eachMetric(base string, fn func(name string, v float64)) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		v, _ := strconv.ParseFloat(val, 64)
		fn(name, v)
	}
}
