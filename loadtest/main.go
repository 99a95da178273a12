// Command keno-loadtest simulates thousands of concurrent players against a
// Keno Mystères server on this machine (loopback only), measures latencies
// with HDR histograms, checks the books at the end, and writes a report
// (text, JSON, HTML).
//
//	keno-loadtest -url ws://127.0.0.1:8080/ws -players 2000 -duration 30s
//	keno-loadtest -spawn-server bin/keno-server      # starts redis-server and a fast-profile server
//
// Past one process's open-file limit it spreads the players over child
// processes (-procs, automatic by default) and merges their figures.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"keno/protocol"
)

type config struct {
	wsURL, base  string
	urls         []string // wsURL may list several servers, comma-separated; players are spread over them
	opsToken     string
	admin        string   // the servers' admin listeners, comma-separated, in the order of wsURL
	admins       []string // admin, split
	players      int
	idle         int
	duration     time.Duration
	ramp         time.Duration
	think        time.Duration
	strategy     string
	disconnect   float64
	flooders     float64
	vandals      float64
	maxGrids     int
	version      int // the protocol version the players speak (0: the newest)
	procs        int
	perProc      int
	prefix       string
	report       string
	spawnServer  string
	child        bool
	childIndex   int
	serverProcs  int
	perfChecks   bool
	profile      string
	cpus, nice   int
	cpuProfile   string
	srvProfile   string        // the first server's CPU profile, 20 s after the ramp, to this file
	fsync        string        // with -spawn-server: the spawned Redis's appendfsync
	killRedis    int           // with -spawn-server: SIGKILL and restart the spawned Redis this many times
	archive      bool          // with -spawn-server: spawn PostgreSQL and archive (archive.go)
	hotWindow    time.Duration // with -archive: HOT_WINDOW
	pgOutage     time.Duration // with -archive: stop PostgreSQL this long, a third into the run
	killArchiver int           // with -archive: SIGKILL and restart the archiver this many times
	kill         func() error
	restart      func(i int, kill bool) error // with -spawn-server: restart server i (SIGTERM, or SIGKILL, then start again)
	restartSrv   bool                         // -restart-server
	killSrv      bool                         // -kill-server
	wallet       string                       // -wallet: redis or seamless
	opFaults     string                       // -operator-faults
	opLatency    time.Duration                // -operator-latency
	stoppedURL   atomic.Pointer[string]       // the server being restarted, while it is down
	verify       func() (bool, string)        // with -spawn-server: keno-server verify on its Redis
	cpu          func() (servers, redis time.Duration)
	redisAddr    string  // with -spawn-server: its Redis, for INFO commandstats
	hog          float64 // share of a core a neighbour keeps busy during the run
	redisCore    bool    // with -spawn-server: Redis alone on a core (cores.go)
	cores        *cores  // that split, once made; nil: everything shares every core
	hogChild     float64 // internal: be that neighbour
	childPIDs    []int   // the tester's child processes (-procs), set before they play
}

// Hard caps: a load test is bounded whatever the flags say.
const (
	maxPlayers  = 60_000
	maxDuration = 10 * time.Minute
)

func main() {
	var c config
	flag.StringVar(&c.wsURL, "url", "ws://127.0.0.1:8080/ws", "server WebSocket URL (loopback only)")
	flag.StringVar(&c.admin, "admin", "http://127.0.0.1:9090", "the servers' admin listeners (ADMIN_ADDR), comma-separated in the order of -url: metrics, books")
	flag.StringVar(&c.opsToken, "ops-token", envOr("KENO_OPS_TOKEN", "dev-ops-token"), "ops token, to read the books at the end")
	flag.IntVar(&c.players, "players", 1000, "concurrent active players (max 60000)")
	flag.IntVar(&c.idle, "idle", 0, "extra players that connect and stay idle (memory per connection)")
	flag.DurationVar(&c.duration, "duration", 30*time.Second, "how long players keep playing (max 10m)")
	flag.DurationVar(&c.ramp, "ramp", 10*time.Second, "ramp-up time")
	flag.DurationVar(&c.think, "think", 3*time.Second, "mean think time between tickets (exponential)")
	flag.StringVar(&c.strategy, "strategy", "random", "Stop-or-Continue strategy: stop, continue or random")
	flag.Float64Var(&c.disconnect, "disconnect", 0.02, "share of tickets during which the player drops and reconnects")
	flag.Float64Var(&c.flooders, "flooders", 0.005, "share of players who flood the server")
	flag.Float64Var(&c.vandals, "vandals", 0.005, "share of players who send bad input")
	flag.IntVar(&c.maxGrids, "grids", 3, "at most this many grids per ticket (1-5)")
	flag.IntVar(&c.version, "protocol", protocol.Versions[0], "the protocol version players speak: 2 (the server sends each step of a game at once, ahead of its t, as the page does) or 1 (each timed message at its t)")
	flag.IntVar(&c.procs, "procs", 0, "processes to spread players over (0: automatic, by the open-file limit)")
	flag.StringVar(&c.prefix, "prefix", "", "player name prefix (default: unique per run)")
	flag.StringVar(&c.report, "report", "loadtest-report", "write report.txt/.json/.html under this folder ('' for none)")
	flag.StringVar(&c.spawnServer, "spawn-server", "", "start this keno-server binary (fast profile) and a redis-server, and test them")
	flag.IntVar(&c.cpus, "cpus", 0, "cores the load tester itself may use (GOMAXPROCS; 0: all). 1 costs less per game while one core suffices (10 000 human-pace players here: 0.45 against 0.52 ms a game): each frame's hand-off from reader to player stays on one core")
	flag.IntVar(&c.nice, "nice", 0, "run the load tester at this lower priority (0: the same as the server; a starved tester reports its own delays as the server's lateness)")
	flag.StringVar(&c.profile, "profile", "fast", "with -spawn-server: the reveal pace, fast (a few ms) or human (150/400 ms)")
	flag.IntVar(&c.serverProcs, "servers", 1, "with -spawn-server: how many server processes (players spread over them)")
	flag.BoolVar(&c.perfChecks, "perf-checks", true, "judge latency and memory goals too (not only correctness)")
	flag.StringVar(&c.cpuProfile, "cpuprofile", "", "write the load tester's own CPU profile to this file (one process only)")
	flag.StringVar(&c.srvProfile, "server-cpuprofile", "", "write the first server's CPU profile (20 s of steady play, from its admin listener's /debug/pprof) to this file")
	flag.StringVar(&c.fsync, "fsync", "always", "with -spawn-server: the spawned Redis's appendfsync, always (the durability contract) or everysec (to measure what the contract costs; acknowledged writes may be lost)")
	flag.BoolVar(&c.archive, "archive", false, "with -spawn-server: spawn a PostgreSQL archive too, run a dedicated archiver, and after the run check both tiers and Redis memory per player")
	flag.DurationVar(&c.hotWindow, "hot-window", 30*time.Second, "with -archive: the servers' HOT_WINDOW")
	flag.DurationVar(&c.pgOutage, "pg-outage", 0, "with -archive: stop PostgreSQL this long, a third into the run")
	flag.IntVar(&c.killArchiver, "kill-archiver", 0, "with -archive: kill -9 and restart the archiver process this many times during the run")
	flag.IntVar(&c.killRedis, "kill-redis", 0, "with -spawn-server: kill -9 and restart the spawned redis-server this many times during the run, then check that every acknowledgement survived")
	flag.BoolVar(&c.restartSrv, "restart-server", false, "with -spawn-server: stop the first server with SIGTERM halfway through the run and start it again; its players reconnect at once, to the next server with -servers 2 or more (a reconnection storm: every connection must succeed)")
	flag.BoolVar(&c.killSrv, "kill-server", false, "with -spawn-server: SIGKILL the first server halfway through the run (a crash: nothing drained) and start it again")
	flag.StringVar(&c.wallet, "wallet", "redis", "with -spawn-server: where the money lives, redis or seamless (a spawned reference operator wallet, protocol/OPERATOR.md; checked against the journal after the run)")
	flag.StringVar(&c.opFaults, "operator-faults", "", "with -wallet seamless: what the operator wallet does wrong, e.g. errors=0.05,timeouts=0.05,lost=0.02 (also duplicates, slow)")
	flag.DurationVar(&c.opLatency, "operator-latency", 5*time.Millisecond, "with -wallet seamless: every answer of the operator wallet takes this long")
	flag.Float64Var(&c.hog, "hog", 0, "start a neighbour process that keeps this share of one core busy during the run (0.5: half a core), as a production host's other programs would")
	flag.Float64Var(&c.hogChild, "hog-child", 0, "internal: be that neighbour")
	flag.BoolVar(&c.redisCore, "redis-core", false, "with -spawn-server: pin the spawned Redis alone to the last core and keep the servers and the load tester on the others (a -hog neighbour runs anywhere), to measure Redis's cost where it does not share its core, as in production; the default shares every core")
	flag.BoolVar(&c.child, "child", false, "internal: run as a child process")
	flag.IntVar(&c.childIndex, "child-index", 0, "internal")
	flag.Parse()
	if c.hogChild > 0 {
		hog(min(c.hogChild, 1))
	}

	if err := run(&c); err != nil {
		fmt.Fprintln(os.Stderr, "keno-loadtest:", err)
		os.Exit(1)
	}
}

// next is the server after u in the list (u itself when there is one).
func (c *config) next(u string) string {
	for i, x := range c.urls {
		if x == u {
			return c.urls[(i+1)%len(c.urls)]
		}
	}
	return c.urls[0]
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (c *config) validate() error {
	c.urls = strings.Split(c.wsURL, ",")
	for i, raw := range c.urls {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") {
			return fmt.Errorf("-url must be ws://host:port/ws[,…]")
		}
		host := u.Hostname()
		if !loopback(host) {
			return fmt.Errorf("-url must point at this machine (127.0.0.0/8, ::1 or localhost), not %q", host)
		}
		if i == 0 {
			c.base = "http://" + u.Host
		}
	}
	c.admins = strings.Split(c.admin, ",")
	for _, raw := range c.admins {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || !loopback(u.Hostname()) {
			return fmt.Errorf("-admin must be http://host:port[,…] on this machine, not %q", raw)
		}
	}
	if c.players < 0 || c.players > maxPlayers || c.idle < 0 || c.players+c.idle > maxPlayers {
		return fmt.Errorf("players + idle must be between 0 and %d", maxPlayers)
	}
	if c.duration <= 0 || c.duration > maxDuration {
		return fmt.Errorf("-duration must be in (0, %v]", maxDuration)
	}
	if c.strategy != "stop" && c.strategy != "continue" && c.strategy != "random" {
		return fmt.Errorf("-strategy must be stop, continue or random")
	}
	if c.maxGrids < 1 || c.maxGrids > 5 {
		return fmt.Errorf("-grids must be 1..5")
	}
	if c.version != 0 && c.version != 1 && c.version != 2 {
		return fmt.Errorf("-protocol must be 1 or 2")
	}
	if (c.restartSrv || c.killSrv) && c.restart == nil && !c.child {
		return fmt.Errorf("-restart-server and -kill-server need -spawn-server (they restart a server it spawned)")
	}
	if c.restartSrv && c.killSrv {
		return fmt.Errorf("-restart-server or -kill-server, not both")
	}
	c.wallet = cmp.Or(c.wallet, "redis")
	if c.wallet != "redis" && c.wallet != "seamless" {
		return fmt.Errorf("-wallet must be redis or seamless")
	}
	if c.wallet == "seamless" && c.spawnServer == "" && !c.child {
		return fmt.Errorf("-wallet seamless needs -spawn-server (it spawns the operator wallet it checks)")
	}
	if c.hog < 0 || c.hog > 1 {
		return fmt.Errorf("-hog must be a share of one core, 0..1")
	}
	if c.redisCore && c.spawnServer == "" && !c.child {
		return fmt.Errorf("-redis-core needs -spawn-server (it pins the Redis it spawned)")
	}
	if c.killRedis < 0 || c.killRedis > 100 || (c.killRedis > 0 && c.kill == nil && !c.child) {
		return fmt.Errorf("-kill-redis must be 0..100, and needs -spawn-server (it kills the Redis it spawned)")
	}
	return nil
}

func run(c *config) error {
	raiseOpenFiles()
	var arch *archiveSetup // with -archive
	var op *operatorSetup  // with -wallet seamless
	var redisAddr string
	if c.spawnServer != "" && !c.child {
		if c.fsync != "always" && c.fsync != "everysec" {
			return fmt.Errorf("-fsync must be always or everysec")
		}
		var extra []string
		if c.archive {
			var err error
			if arch, err = startArchive(c.hotWindow); err != nil {
				return err
			}
			defer arch.stop()
			extra = arch.serverArgs()
		}
		if c.wallet == "seamless" {
			var err error
			if op, err = startOperator(c.spawnServer, c.opFaults, c.opLatency); err != nil {
				return err
			}
			defer op.stop()
			extra = append(extra, op.serverArgs()...)
		}
		if c.redisCore { // before spawning: the servers inherit the mask
			var err error
			if c.cores, err = reserveRedisCore(); err != nil {
				return err
			}
			if c.cpus == 0 {
				runtime.GOMAXPROCS(c.cores.rest.Count())
			}
		}
		sp, err := spawn(c.spawnServer, c.serverProcs, c.profile, c.fsync, c.cores, extra...)
		if err != nil {
			return err
		}
		defer sp.stop()
		redisAddr = sp.addr
		if arch != nil {
			arch.serverBin, arch.redisURL = c.spawnServer, "redis://"+sp.addr
			arch.measureBaseline(sp.addr)
			if err := arch.startArchiver(); err != nil {
				return err
			}
			sp.verifyArgs = []string{"-archive", arch.pg.URL()}
		}
		c.wsURL, c.admin = strings.Join(sp.urls, ","), strings.Join(sp.admins, ",")
		c.kill, c.verify, c.cpu, c.redisAddr, c.restart = sp.killRedis, sp.verify, sp.cpu, sp.addr, sp.restartServer
	}
	if err := c.validate(); err != nil {
		return err
	}
	// After spawning: the server and Redis keep the normal priority.
	if c.cpus > 0 {
		runtime.GOMAXPROCS(c.cpus)
	}
	if c.nice > 0 {
		syscall.Setpriority(syscall.PRIO_PROCESS, 0, c.nice)
	}
	if c.prefix == "" {
		c.prefix = fmt.Sprintf("lt%x", time.Now().UnixNano()&0xffffff)
	}
	total := c.players + c.idle
	limit := openFilesLimit()
	if c.procs == 0 {
		perProc := int(limit) - 500 // sockets, plus room for files and the HTTP pool
		c.procs = max(1, (total+perProc-1)/max(1, perProc))
	}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		collectOnlyNearLimit(c.procs)
	}
	if c.cpuProfile != "" && c.procs == 1 {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if c.child {
		return runChild(c)
	}
	fmt.Fprintf(os.Stderr, "keno-loadtest: %d active + %d idle players against %s for %v, over %d process(es) (open-file limit %d each)\n",
		c.players, c.idle, c.wsURL, c.duration, c.procs, limit)

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	rep := &Report{Config: reportConfig(c), Started: time.Now()}
	srv := newServerWatch(c.admins, c.opsToken)
	rep.ServerBefore = srv.sample()

	kills := killRedisDuringRun(ctx, c)
	restarted := restartServerMidRun(ctx, c)
	var archFaults func() (int, int)
	if arch != nil {
		archFaults = arch.faults(ctx, c)
	}
	stopHog, err := startHog(c.hog, c.cores)
	if err != nil {
		return err
	}
	defer stopHog()
	if c.srvProfile != "" {
		go profileServer(ctx, c.admins[0], c.ramp, c.srvProfile)
	}
	cpu0 := c.cpuNow()
	var cmd0 map[string][2]int64
	if c.redisAddr != "" {
		cmd0 = commandStats(c.redisAddr)
	}
	var stats *Stats
	steady := func() *steadyCost { return nil }
	ready := func() { rep.ServerIdle = srv.sample(); steady = c.watchSteady(ctx) }
	if c.procs == 1 {
		stats, err = runLocal(ctx, c, func(int) { ready() })
	} else {
		stats, err = runChildren(ctx, c, ready)
	}
	if err != nil {
		return err
	}
	rep.ServerAfter = srv.sample()
	rep.RedisKills = kills()
	rep.ServerRestart = restarted()
	if rep.RedisKills == 0 && rep.ServerRestart == "" { // a restarted process is a new one: its CPU would be half counted
		rep.CPUWholeRun = c.cpuNow().since(cpu0, stats.Games)
		rep.CPU = rep.CPUWholeRun
		if c.redisAddr != "" {
			rep.Redis = perGame(cmd0, commandStats(c.redisAddr), stats.Games)
			rep.RedisStalls = redisStalls(c.redisAddr)
		}
		if s := steady(); s != nil {
			rep.Steady, rep.CPU = s, s.CPU
			if s.Redis != nil {
				rep.Redis = s.Redis
			}
		}
	}
	stopHog()
	rep.finish(c, stats)
	if op != nil {
		rep.Seamless = op.check(c, c.spawnServer, redisAddr)
	}
	rep.Books = fetchBooks(c.admins[0], c.opsToken)
	if arch != nil {
		outages, kills := archFaults()
		ac, err := arch.check(redisAddr)
		if err != nil {
			return err
		}
		ac.PGOutages, ac.ArchiverKills = outages, kills
		rep.Archive = ac
	}
	if c.verify != nil {
		ok, out := c.verify()
		rep.Verify = &ok
		rep.VerifyOutput = lastLines(out, 12)
	}
	return rep.write(c.report, os.Stdout, c.perfChecks)
}

// runLocal runs every player in this process. onIdle is called once the
// idle players are all connected, before the active ones start.
func runLocal(ctx context.Context, c *config, onIdle func(int)) (*Stats, error) {
	stats := newStats()
	stop := progress(stats, c)
	defer stop()
	return stats, playAll(ctx, c, stats, 0, c.players, c.idle, func() { onIdle(c.idle) })
}

// playAll connects idle players, calls ready, then ramps the active ones and
// waits for them.
func playAll(ctx context.Context, c *config, stats *Stats, first, players, idle int, ready func()) error {
	idleCtx, stopIdle := context.WithCancel(ctx)
	defer stopIdle()
	var wgIdle sync.WaitGroup
	for i := 0; i < idle; i++ {
		p := &player{name: fmt.Sprintf("%s-i%d", c.prefix, first+i), cfg: c, stats: stats, url: c.urls[(first+i)%len(c.urls)]}
		wgIdle.Add(1)
		go func() { defer wgIdle.Done(); p.idle(idleCtx) }()
		if i%50 == 49 {
			time.Sleep(50 * time.Millisecond) // about 1 000 connections a second
		}
	}
	if idle > 0 {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			var n int64
			stats.add(func(s *Stats) { n = s.IdlePlayers + s.Errors["connect"] + s.Errors["login"] })
			if int(n) >= idle {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(2 * time.Second) // let the server settle before measuring
	}
	ready()

	deadline := time.Now().Add(c.ramp + c.duration)
	// Players finish the ticket in play after the deadline, within a bound.
	runCtx, cancel := context.WithDeadline(ctx, deadline.Add(60*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < players; i++ {
		id := first + i
		rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
		p := &player{name: fmt.Sprintf("%s-%d", c.prefix, id), cfg: c, stats: stats, rng: rng, url: c.urls[id%len(c.urls)]}
		switch r := rng.Float64(); {
		case r < c.flooders:
			p.role = flooder
		case r < c.flooders+c.vandals:
			p.role = vandal
		}
		stats.add(func(s *Stats) { s.Players++ })
		wg.Add(1)
		go func() { defer wg.Done(); p.run(runCtx, deadline) }()
		if players > 0 {
			time.Sleep(c.ramp / time.Duration(players))
		}
	}
	wg.Wait()
	stopIdle()
	wgIdle.Wait()
	return nil
}

// progress prints a live line every second until stopped.
func progress(s *Stats, c *config) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lastGames int64
		for {
			select {
			case <-done:
				fmt.Fprintln(os.Stderr)
				return
			case <-t.C:
			}
			var line string
			s.add(func(s *Stats) {
				p99 := func(h *hdrHist) float64 { return float64(h.ValueAtQuantile(99)) / 1000 }
				line = fmt.Sprintf("\r%5.0fs  players %d/%d  idle %d  games %d (%d/s)  p99 lateness %.1f ms (last s %.1f)  p99 accept %.1f ms (last s %.1f)  errors %d  busy %d   ",
					time.Since(s.start).Seconds(), s.Connected, s.Players, s.IdlePlayers, s.Games, s.Games-lastGames,
					p99(s.Lateness), p99(s.winLateness), p99(s.Accept), p99(s.winAccept), sumErrors(s.Errors), s.Expected["busy"])
				lastGames = s.Games
				s.winLateness.Reset()
				s.winAccept.Reset()
			})
			fmt.Fprint(os.Stderr, line)
		}
	}()
	return func() { close(done) }
}

func sumErrors(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// runChild runs a share of the players and reports to the parent on stdout:
// "IDLE" once its idle players are connected, then waits for "GO" on stdin;
// at the end one JSON line with its Stats.
func runChild(c *config) error {
	stats := newStats()
	in := bufio.NewScanner(os.Stdin)
	err := playAll(context.Background(), c, stats, c.childIndex*c.perProc, c.players, c.idle, func() {
		fmt.Println("IDLE")
		in.Scan() // GO
	})
	if err != nil {
		return err
	}
	stats.export()
	b, _ := json.Marshal(stats)
	fmt.Printf("RESULT %s\n", b)
	return nil
}

// runChildren spreads players over child processes of this same binary.
func runChildren(ctx context.Context, c *config, onIdle func()) (*Stats, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c.perProc = (c.players + c.idle + c.procs - 1) / c.procs
	type child struct {
		cmd *exec.Cmd
		in  *os.File
		out *bufio.Scanner
	}
	var kids []child
	for i := 0; i < c.procs; i++ {
		share := func(n int) int { return n/c.procs + btoi(i < n%c.procs) }
		args := []string{"-child", "-child-index", strconv.Itoa(i), "-procs", strconv.Itoa(c.procs), "-url", c.wsURL, "-cpus", strconv.Itoa(c.cpus), "-nice", "0", "-players", strconv.Itoa(share(c.players)),
			"-idle", strconv.Itoa(share(c.idle)), "-duration", c.duration.String(), "-ramp", c.ramp.String(), "-think", c.think.String(),
			"-strategy", c.strategy, "-disconnect", fmt.Sprint(c.disconnect), "-flooders", fmt.Sprint(c.flooders),
			"-vandals", fmt.Sprint(c.vandals), "-grids", strconv.Itoa(c.maxGrids), "-protocol", strconv.Itoa(c.protocol()), "-prefix", fmt.Sprintf("%s-p%d", c.prefix, i), "-report", "",
			"-kill-redis", strconv.Itoa(c.killRedis), "-wallet", c.wallet}
		if c.killSrv || c.restartSrv {
			args = append(args, "-kill-server") // (a child only tolerates what it causes)
		}
		cmd := exec.CommandContext(ctx, self, args...)
		cmd.Stderr = os.Stderr
		pr, pw, _ := os.Pipe()
		cmd.Stdin = pr
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		pr.Close()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		kids = append(kids, child{cmd, pw, sc})
	}
	for _, k := range kids { // every child has its idle players connected
		if !k.out.Scan() || k.out.Text() != "IDLE" {
			return nil, errors.New("a child process failed before its idle players connected")
		}
	}
	for _, k := range kids {
		c.childPIDs = append(c.childPIDs, k.cmd.Process.Pid)
	}
	onIdle()
	for _, k := range kids {
		fmt.Fprintln(k.in, "GO")
	}
	fmt.Fprintf(os.Stderr, "children running for %v …\n", c.ramp+c.duration)
	total := newStats()
	for _, k := range kids {
		for k.out.Scan() {
			line := k.out.Text()
			if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
				var s Stats
				if err := json.Unmarshal([]byte(rest), &s); err != nil {
					return nil, err
				}
				total.merge(&s)
			}
		}
		k.cmd.Wait()
	}
	return total, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// collectOnlyNearLimit turns the garbage collector off until the heap nears
// a share of the machine's memory (a quarter, at most 4 GiB, split among
// the load-test processes). A bounded run then rarely collects at all: a
// collection of ten thousand players' state stalls the tester for
// hundreds of milliseconds, which it would report as the server's lateness.
func collectOnlyNearLimit(procs int) {
	var si syscall.Sysinfo_t
	limit := int64(1 << 30)
	if syscall.Sysinfo(&si) == nil {
		limit = min(int64(si.Totalram)*int64(si.Unit)/4, 4<<30)
	}
	debug.SetMemoryLimit(limit / int64(max(1, procs)))
	debug.SetGCPercent(-1)
}

func raiseOpenFiles() {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) == nil && r.Cur < r.Max {
		r.Cur = r.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
	}
}

func openFilesLimit() uint64 {
	var r syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	return r.Cur
}

// killRedisDuringRun kills and restarts the spawned Redis c.killRedis times,
// evenly spread over the ramp and the run; the function it returns waits
// for the last restart and says how many kills were done.
func killRedisDuringRun(ctx context.Context, c *config) func() int {
	done := make(chan int, 1)
	if c.killRedis == 0 {
		done <- 0
		return func() int { return <-done }
	}
	every := (c.ramp + c.duration) / time.Duration(c.killRedis+1)
	go func() {
		n := 0
		defer func() { done <- n }()
		for n < c.killRedis {
			select {
			case <-time.After(every):
			case <-ctx.Done():
				return
			}
			if err := c.kill(); err != nil {
				fmt.Fprintln(os.Stderr, "keno-loadtest: restarting redis-server:", err)
				return
			}
			n++
			fmt.Fprintf(os.Stderr, "\nredis-server killed (-9) and restarted (%d of %d)\n", n, c.killRedis)
		}
	}()
	return func() int { return <-done }
}

// stopped reports whether url is the server being restarted right now.
func (c *config) stopped(url string) bool {
	u := c.stoppedURL.Load()
	return u != nil && *u == url
}

// restartServerMidRun restarts the first spawned server halfway through
// the run (with -restart-server); the function it returns waits for it
// and says what happened ("" if it was not asked).
func restartServerMidRun(ctx context.Context, c *config) func() string {
	done := make(chan string, 1)
	if !c.restartSrv && !c.killSrv {
		done <- ""
		return func() string { return <-done }
	}
	go func() {
		select {
		case <-time.After(c.ramp + c.duration/2):
		case <-ctx.Done():
			done <- "not done: the run was interrupted"
			return
		}
		t0 := time.Now()
		c.stoppedURL.Store(&c.urls[0])
		defer c.stoppedURL.Store(nil)
		if err := c.restart(0, c.killSrv); err != nil {
			done <- "failed: " + err.Error()
			return
		}
		how := "stopped (SIGTERM, drained)"
		if c.killSrv {
			how = "killed (SIGKILL)"
		}
		msg := fmt.Sprintf("server 1 %s and ready again after %.1f s", how, time.Since(t0).Seconds())
		fmt.Fprintf(os.Stderr, "\n%s\n", msg)
		done <- msg
	}()
	return func() string { return <-done }
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// cpuSample is the CPU time used so far by the spawned servers, the
// spawned Redis and this process (its children included).
type cpuSample struct{ servers, redis, tester time.Duration }

func (c *config) cpuNow() cpuSample {
	var s cpuSample
	if c.cpu != nil {
		s.servers, s.redis = c.cpu()
	}
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids) // tester children (-procs); spawned ones still run, so are not counted
	for _, r := range []syscall.Rusage{self, kids} {
		s.tester += time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return s
}

// since is the CPU per game (ms) of each part between two samples.
func (s cpuSample) since(before cpuSample, games int64) map[string]float64 {
	if games == 0 {
		return nil
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(games) }
	out := map[string]float64{"tester": per(s.tester - before.tester)}
	if s.servers > 0 {
		out["servers"], out["redis"] = per(s.servers-before.servers), per(s.redis-before.redis)
	}
	return out
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return (ip != nil && ip.IsLoopback()) || host == "localhost"
}

// protocol is the version the players speak.
func (c *config) protocol() int {
	if c.version == 0 {
		return protocol.Versions[0]
	}
	return c.version
}
