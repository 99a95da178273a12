package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is the outcome of a run.
type Report struct {
	Config         map[string]any         `json:"config"`
	Started        time.Time              `json:"started"`
	Elapsed        float64                `json:"elapsed_s"`
	Players        int64                  `json:"players"`
	Idle           int64                  `json:"idle_players"`
	Games          int64                  `json:"games"`
	Tickets        int64                  `json:"tickets"`
	GamesPerSec    float64                `json:"games_per_sec"`
	PeakPerSec     int64                  `json:"peak_games_per_sec"`
	Latency        map[string]Percentiles `json:"latency"`
	Errors         map[string]int64       `json:"errors"`
	Expected       map[string]int64       `json:"expected_refusals"`
	Reconnects     int64                  `json:"reconnects"`
	Resumed        int64                  `json:"resumed_games"`
	Mismatches     []string               `json:"balance_mismatches"`
	Unsettled      int64                  `json:"unsettled_games"`
	Abandoned      int64                  `json:"abandoned_at_hard_stop"`
	DoubleSettle   int64                  `json:"double_settled_games"`
	LostAcks       []string               `json:"lost_acknowledgements"`
	RedisKills     int                    `json:"redis_kills"`
	ServerRestart  string                 `json:"server_restart,omitempty"`  // -restart-server: what happened
	CPU            map[string]float64     `json:"cpu_ms_per_game,omitempty"` // servers, redis (when spawned), tester: in steady play where measured, else over the whole run
	CPUWholeRun    map[string]float64     `json:"cpu_ms_per_game_whole_run,omitempty"`
	Steady         *steadyCost            `json:"steady,omitempty"`         // the steady-play window the CPU and commandstats figures are from
	Redis          *RedisCommands         `json:"redis_commands,omitempty"` // INFO commandstats per game (when spawned)
	RedisStalls    string                 `json:"redis_stalls,omitempty"`   // LATENCY LATEST (when spawned)
	Verify         *bool                  `json:"verify_clean,omitempty"`   // keno-server verify on a spawned Redis
	VerifyOutput   string                 `json:"verify_output,omitempty"`
	Stakes         int64                  `json:"stakes_cents"`
	Wins           int64                  `json:"wins_cents"`
	RTP            RTPCheck               `json:"rtp"`
	Books          map[string]any         `json:"books"`
	ServerBefore   ServerSample           `json:"server_before"`
	ServerIdle     ServerSample           `json:"server_idle"`
	ServerAfter    ServerSample           `json:"server_after"`
	PerIdleKiB     float64                `json:"server_kib_per_idle_player"`      // RSS delta after a GC
	PerIdleLiveKiB float64                `json:"server_live_kib_per_idle_player"` // heap + stacks in use
	PerSecond      []int64                `json:"games_each_second"`
	Archive        *ArchiveCheck          `json:"archive,omitempty"`  // with -archive
	Seamless       *SeamlessCheck         `json:"seamless,omitempty"` // with -wallet seamless
	Checks         []Check                `json:"checks"`
}

// Check is one pass/fail verdict against a goal.
type Check struct {
	What string `json:"what"`
	Goal string `json:"goal"`
	Got  string `json:"got"`
	OK   bool   `json:"ok"`
}

func reportConfig(c *config) map[string]any {
	return map[string]any{"url": c.wsURL, "players": c.players, "idle": c.idle, "duration": c.duration.String(),
		"ramp": c.ramp.String(), "think": c.think.String(), "strategy": c.strategy, "disconnect": c.disconnect,
		"flooders": c.flooders, "vandals": c.vandals, "grids": c.maxGrids, "procs": c.procs, "profile": c.profile, "cpus": c.cpus, "nice": c.nice, "hog": c.hog, "cores": c.cores.String()}
}

func (r *Report) finish(c *config, s *Stats) {
	r.Elapsed = time.Since(r.Started).Seconds()
	r.Players, r.Idle, r.Games, r.Tickets = s.Players, s.IdlePlayers, s.Games, s.Tickets
	r.Latency = map[string]Percentiles{"connect": percentiles(s.Connect), "confirm_accept": percentiles(s.Accept),
		"reveal_lateness": percentiles(s.Lateness), "settle": percentiles(s.Settle)}
	r.Errors, r.Expected = s.Errors, s.Expected
	r.Reconnects, r.Resumed = s.Reconnects, s.Resumed
	r.Mismatches, r.Unsettled, r.DoubleSettle, r.Abandoned = s.Mismatches, s.Unsettled, s.DoubleSettle, s.Abandoned
	r.LostAcks = s.LostAcks
	r.Stakes, r.Wins, r.RTP = s.Stakes, s.Wins, s.rtp()
	r.PerSecond = s.PerSecond
	active := 0
	for _, n := range s.PerSecond {
		r.PeakPerSec = max(r.PeakPerSec, n)
		if n > 0 {
			active++
		}
	}
	if active > 0 {
		r.GamesPerSec = float64(s.Games) / float64(active)
	}
	if r.Idle > 0 && r.ServerIdle.RSS > 0 {
		r.PerIdleKiB = float64(r.ServerIdle.RSS-r.ServerBefore.RSS) / float64(r.Idle) / 1024
		r.PerIdleLiveKiB = float64(r.ServerIdle.Heap+r.ServerIdle.Stack-r.ServerBefore.Heap-r.ServerBefore.Stack) / float64(r.Idle) / 1024
	}
}

func (r *Report) check(what, goal, got string, ok bool) {
	r.Checks = append(r.Checks, Check{what, goal, got, ok})
}

func (r *Report) verdicts(perf bool) {
	r.Checks = nil
	lat, acc := r.Latency["reveal_lateness"], r.Latency["confirm_accept"]
	if r.Players > 0 {
		if perf {
			r.check("reveal lateness p99", "< 20 ms", fmt.Sprintf("%.1f ms", lat.P99), lat.P99 < 20)
			r.check("confirm → accept p99", "< 50 ms", fmt.Sprintf("%.1f ms", acc.P99), acc.P99 < 50)
		}
		if cpu := r.CPU; perf && cpu != nil {
			ms := func(k string) string { return fmt.Sprintf("%.3f ms", cpu[k]) }
			per := "per game"
			if r.Steady != nil {
				per = "per game in steady play"
			}
			if _, ok := cpu["servers"]; ok {
				r.check("server CPU "+per, fmt.Sprintf("≤ %.2f ms", goalServerMS), ms("servers"), cpu["servers"] <= goalServerMS)
				r.check("Redis CPU "+per, fmt.Sprintf("≤ %.2f ms", goalRedisMS), ms("redis"), cpu["redis"] <= goalRedisMS)
			}
			r.check("load tester CPU "+per, fmt.Sprintf("≤ %.2f ms", goalTesterMS), ms("tester"), cpu["tester"] <= goalTesterMS)
		}
		r.check("unexpected errors", "0", strconv.FormatInt(sumErrors(r.Errors), 10), sumErrors(r.Errors) == 0)
		if r.Seamless == nil { // seamless: the operator's books are checked instead, below
			r.check("client balance = wallet", "every player", fmt.Sprintf("%d mismatches", len(r.Mismatches)), len(r.Mismatches) == 0)
		}
		r.check("games settled exactly once", "every game", fmt.Sprintf("%d unsettled, %d twice", r.Unsettled, r.DoubleSettle), r.Unsettled == 0 && r.DoubleSettle == 0)
		r.check("acknowledged games kept", fmt.Sprintf("every accepted game in the wallet (%d Redis kills)", r.RedisKills),
			fmt.Sprintf("%d lost", len(r.LostAcks)), len(r.LostAcks) == 0)
		r.check("observed RTP vs exact", "within the 99% CI", fmt.Sprintf("%.2f%% vs %.2f%% (per game %.2f%% vs %.2f%% ±%.2f%%; %.2f%% without the largest win, %.0f×)",
			100*r.RTP.Observed, 100*r.RTP.Exact, 100*r.RTP.Mean, 100*r.RTP.ExactX, 100*r.RTP.HalfCI, 100*r.RTP.LessMax, r.RTP.MaxX), r.RTP.Within || r.Games < 2)
	}
	if r.Verify != nil {
		got := "see verify_output"
		for _, line := range strings.Split(r.VerifyOutput, "\n") {
			if strings.HasPrefix(line, "players:") {
				got = line
			}
		}
		r.check("sealed records (keno-server verify)", "clean", got, *r.Verify)
	}
	if a := r.Archive; a != nil {
		r.check("every settled game archived once", fmt.Sprintf("%d games seen by the players", r.Games),
			fmt.Sprintf("%d in PostgreSQL, %d records left in Redis", a.Games, a.RedisGamesLeft), a.Games == r.Games && a.RedisGamesLeft == 0)
		r.check("journal moved out of Redis", "0 entries older than the hot window left", fmt.Sprintf("%d left, %d archived", a.RedisJournalLeft, a.Entries), a.RedisJournalLeft == 0)
		r.check("Redis memory per player (INFO used_memory / players)", "≤ 4 KB", fmt.Sprintf("%.0f B (%d players; %.0f B without Redis's own %d B)", a.BytesPerPlayer, a.RedisPlayers, a.PlayerBytes, a.RedisBaseline), a.BytesPerPlayer <= 4000)
	}
	if s := r.Seamless; s != nil {
		r.check("operator wallet: nothing owed after the run", "0 calls", fmt.Sprintf("%d left after %.0f s (faults injected %v)", s.OwedLeft, s.DrainSeconds, s.Faults), s.OwedLeft == 0)
		r.check("operator books: balance = deposits − debits + credits", "every player", fmt.Sprintf("%d of %d broken", len(s.BooksBroken), s.Players), len(s.BooksBroken) == 0)
		r.check("operator vs journal: debited = staked, credited = won, one debit per bet, one credit per game", "every player",
			fmt.Sprintf("%d disagree; debited %d, credited %d, %d debits rolled back", len(s.Disagreements), s.Debited, s.Credited, s.Rollbacks), len(s.Disagreements) == 0)
		r.check("keno-server reconcile", "clean", s.Reconcile, s.Clean)
	}
	if b, ok := r.Books["balanced"].(bool); ok {
		r.check("books (Σ balances + house = deposits − withdrawals)", "balanced", fmt.Sprint(b), b)
	} else {
		r.check("books", "balanced", "could not read /api/ops/books", false)
	}
	// With few idle players the server's fixed memory (runtime, pools,
	// Redis connections) dominates the difference; the figure is printed
	// but not judged.
	if r.Idle >= minIdleJudged && perf {
		r.check("server memory per idle player", "≤ 16 KiB", fmt.Sprintf("%.1f KiB", r.PerIdleKiB), r.PerIdleKiB <= 16)
	}
}

const minIdleJudged = 1000

// write prints the text report and saves text, JSON and HTML.
func (r *Report) write(dir string, out io.Writer, perf bool) error {
	r.verdicts(perf)
	var txt strings.Builder
	r.text(&txt)
	fmt.Fprint(out, txt.String())
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		js, _ := json.MarshalIndent(r, "", "  ")
		os.WriteFile(filepath.Join(dir, "report.json"), js, 0o644)
		os.WriteFile(filepath.Join(dir, "report.txt"), []byte(txt.String()), 0o644)
		f, err := os.Create(filepath.Join(dir, "report.html"))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := htmlReport.Execute(f, r); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nreport: %s/report.{txt,json,html}\n", dir)
	}
	for _, c := range r.Checks {
		if !c.OK {
			return fmt.Errorf("%d check(s) failed", countFailed(r.Checks))
		}
	}
	return nil
}

func countFailed(cs []Check) int {
	n := 0
	for _, c := range cs {
		if !c.OK {
			n++
		}
	}
	return n
}

func (r *Report) text(w io.Writer) {
	fmt.Fprintf(w, "\nKeno Mystères load test — %s\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(w, "config: %v\n", r.Config)
	fmt.Fprintf(w, "ran %.1f s: %d active players, %d idle; %d tickets, %d games (%.0f games/s mean, %d peak)\n",
		r.Elapsed, r.Players, r.Idle, r.Tickets, r.Games, r.GamesPerSec, r.PeakPerSec)
	fmt.Fprintf(w, "reconnects %d (games resumed %d); stakes %.2f €, wins %.2f €\n", r.Reconnects, r.Resumed, float64(r.Stakes)/100, float64(r.Wins)/100)
	if a := r.Archive; a != nil {
		fmt.Fprintf(w, "archive (hot window %s, waited %.0f s; PostgreSQL outages %d, archiver kills %d): %d entries, %d games, %d ledger rows in PostgreSQL; Redis: %d journal entries and %d game records left, %d B used for %d players = %.0f B per player\n",
			a.HotWindow, a.Waited, a.PGOutages, a.ArchiverKills, a.Entries, a.Games, a.Ledger, a.RedisJournalLeft, a.RedisGamesLeft, a.RedisUsedMemory, a.RedisPlayers, a.BytesPerPlayer)
		fmt.Fprintf(w, "players' own keys: %.0f B per player (Σ MEMORY USAGE); one player's keys (bytes): %v\nRedis used_memory_dataset %d B, mem_clients_normal %d B; other keys: %v\n", a.KeyBytes, a.OnePlayer, a.Dataset, a.Clients, a.OtherKeys)
		if a.Games > 0 {
			fmt.Fprintf(w, "PostgreSQL: %d B on disk, %.0f B per archived game\n", a.PGBytes, float64(a.PGBytes)/float64(a.Games))
		}
	}
	cpu := func(m map[string]float64) string {
		return fmt.Sprintf("servers %.3f ms, redis %.3f ms, load tester %.3f ms", m["servers"], m["redis"], m["tester"])
	}
	if s := r.Steady; s != nil {
		fmt.Fprintf(w, "CPU per game in steady play (from /proc; %d games settled from %.0f s to %.0f s): %s\n", s.Games, s.From, s.To, cpu(s.CPU))
	}
	if r.CPUWholeRun != nil {
		fmt.Fprintf(w, "CPU per game over the whole run (ramp, connections and the last tickets included): %s\n", cpu(r.CPUWholeRun))
	}
	if r.Redis != nil {
		when := "the whole run"
		if r.Steady != nil && r.Steady.Redis != nil {
			when = "steady play"
		}
		fmt.Fprintf(w, "Redis (INFO commandstats, %s): %v\nRedis's stalls (LATENCY LATEST): %s\n", when, r.Redis, r.RedisStalls)
	}
	if r.ServerRestart != "" {
		fmt.Fprintf(w, "mid-run restart: %s; reconnects %d; failed connection attempts %d\n", r.ServerRestart, r.Reconnects, r.Errors["connect"])
	}
	if r.RedisKills > 0 || len(r.LostAcks) > 0 {
		fmt.Fprintf(w, "redis-server killed (-9) and restarted %d times; accepted games lost: %d %v\n", r.RedisKills, len(r.LostAcks), r.LostAcks[:min(len(r.LostAcks), 10)])
	}
	if r.Abandoned > 0 {
		fmt.Fprintf(w, "%d games were still in play at the hard stop (deadline + 60 s): the server settles them after its grace period\n", r.Abandoned)
	}
	fmt.Fprintf(w, "\n%-16s %9s %9s %9s %9s %9s %9s\n", "latency (ms)", "count", "p50", "p90", "p99", "p99.9", "max")
	for _, k := range []string{"connect", "confirm_accept", "reveal_lateness", "settle"} {
		p := r.Latency[k]
		fmt.Fprintf(w, "%-16s %9d %9.2f %9.2f %9.2f %9.2f %9.2f\n", k, p.Count, p.P50, p.P90, p.P99, p.P999, p.Max)
	}
	fmt.Fprintf(w, "\nunexpected errors: %s\nexpected refusals (flooders, bad input): %s\n", fmtCodes(r.Errors), fmtCodes(r.Expected))
	if steps := r.ServerAfter.StepsP99MS; len(steps) > 0 {
		names := make([]string, 0, len(steps))
		for n := range steps {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprint(w, "server's steps, p99 since it started:")
		for _, n := range names {
			fmt.Fprintf(w, " %s %.1f ms;", n, steps[n])
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "server's own view: p99 reveal lateness %.1f ms, p99 confirm→accept %.1f ms (the figures above add the network and the load tester's own scheduling)\n",
		r.ServerAfter.RevealP99MS, r.ServerAfter.AcceptP99MS)
	fmt.Fprintf(w, "admission: %d tickets refused busy by the server(s) (%d refusals seen by players, retried); limit of games in play at the end %v\n",
		r.ServerAfter.Busy-r.ServerBefore.Busy, r.Expected["busy"], r.ServerAfter.AdmitLimit)
	fmt.Fprintf(w, "server: RSS %s before, %s with idle players, %s after; open-file limit %d; goroutines %d → %d\n",
		kib(r.ServerBefore.RSS), kib(r.ServerIdle.RSS), kib(r.ServerAfter.RSS), r.ServerAfter.OpenFiles, r.ServerBefore.Goroutines, r.ServerIdle.Goroutines)
	if r.Idle > 0 {
		fmt.Fprintf(w, "server memory per idle player: %.1f KiB RSS (%.1f KiB heap + stacks in use), after a GC", r.PerIdleKiB, r.PerIdleLiveKiB)
		if r.Idle < minIdleJudged {
			fmt.Fprintf(w, " (not judged under %d idle players: fixed costs dominate)", minIdleJudged)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "books: %v\n\nchecks:\n", r.Books["books"])
	for _, c := range r.Checks {
		mark := "PASS"
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  [%s] %-52s goal %-18s got %s\n", mark, c.What, c.Goal, c.Got)
	}
	for i, m := range r.Mismatches {
		if i == 10 {
			fmt.Fprintf(w, "  … %d more mismatches\n", len(r.Mismatches)-10)
			break
		}
		fmt.Fprintln(w, "  mismatch:", m)
	}
}

func fmtCodes(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func kib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// ServerSample is the server's own figures from /metrics.
type ServerSample struct {
	// The server's own view, from its histograms (since it started): how
	// late it sent the timed messages, and how long confirms took inside it.
	RevealP99MS float64 `json:"reveal_lateness_p99_ms,omitempty"`
	AcceptP99MS float64 `json:"confirm_accept_p99_ms,omitempty"`
	// StepsP99MS: p99 of each step the server times — a wallet operation
	// ("bet", "settle", … : the bank's, the operator's call included) and
	// each call to the operator's wallet ("operator debit", …).
	StepsP99MS map[string]float64 `json:"steps_p99_ms,omitempty"`
	// hists: the buckets (upper bound → count) of each histogram read,
	// summed over the servers, by histKey.
	hists      map[string]map[float64]float64
	RSS        int64   `json:"rss_bytes"`
	Heap       int64   `json:"heap_inuse_bytes"`
	Stack      int64   `json:"stack_inuse_bytes"`
	Goroutines int64   `json:"goroutines"`
	Sessions   int64   `json:"sessions"`
	OpenFiles  int64   `json:"open_files_limit"`
	Busy       int64   `json:"busy_refusals"` // tickets refused busy (admission control)
	InPlay     int64   `json:"games_in_play"` // and the limit then (+Inf: none)
	AdmitLimit float64 `json:"-"`             // +Inf (no limit) has no JSON form: text report only
}

type serverWatch struct {
	bases []string
	token string
}

func newServerWatch(admins []string, token string) *serverWatch {
	return &serverWatch{bases: admins, token: token}
}

// sample sums the figures of the watched servers.
func (w *serverWatch) sample() ServerSample {
	var s ServerSample
	for _, base := range w.bases {
		// Collect garbage first: the steady-state footprint, not the litter.
		req, _ := http.NewRequest(http.MethodPost, base+"/api/ops/gc", nil)
		req.Header.Set("Authorization", "Bearer "+w.token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		eachMetric(base, func(name string, v float64) {
			if key, le, ok := bucketLine(name); ok {
				if s.hists == nil {
					s.hists = map[string]map[float64]float64{}
				}
				if s.hists[key] == nil {
					s.hists[key] = map[float64]float64{}
				}
				s.hists[key][le] += v
				return
			}
			switch name {
			case "process_resident_memory_bytes":
				s.RSS += int64(v)
			case "go_memstats_heap_inuse_bytes":
				s.Heap += int64(v)
			case "go_memstats_stack_inuse_bytes":
				s.Stack += int64(v)
			case "go_goroutines":
				s.Goroutines += int64(v)
			case "keno_sessions_connected":
				s.Sessions += int64(v)
			case "keno_open_files_limit":
				s.OpenFiles = int64(v)
			case "keno_busy_refusals_total":
				s.Busy += int64(v)
			case "keno_games_in_play":
				s.InPlay += int64(v)
			case "keno_admission_limit_games":
				s.AdmitLimit += v
			}
		})
	}
	for key, b := range s.hists {
		p99 := quantile(b, 0.99) * 1000
		switch key {
		case revealKey:
			s.RevealP99MS = p99
		case acceptKey:
			s.AcceptP99MS = p99
		default:
			if s.StepsP99MS == nil {
				s.StepsP99MS = map[string]float64{}
			}
			s.StepsP99MS[key] = p99
		}
	}
	return s
}

// The histograms read from /metrics, by key: the two latencies, and a
// step for each label value of the per-step ones.
const (
	revealKey = "reveal lateness"
	acceptKey = "confirm accept"
)

// bucketLine reads a bucket line of the histograms the report uses: its
// key (see above; a wallet operation's op, "operator " + a call) and upper
// bound.
func bucketLine(line string) (key string, le float64, ok bool) {
	name, rest, found := strings.Cut(line, "_bucket{")
	if !found {
		return "", 0, false
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			labels[k] = strings.Trim(v, `"`)
		}
	}
	switch name {
	case "keno_reveal_lateness_seconds":
		key = revealKey
	case "keno_confirm_accept_seconds":
		key = acceptKey
	case "keno_redis_op_seconds":
		key = labels["op"]
	case "keno_operator_call_seconds":
		key = "operator " + labels["call"]
	}
	le, err := strconv.ParseFloat(labels["le"], 64)
	return key, le, err == nil && key != "" && key != "operator "
}

// quantile of a cumulative histogram (upper bound → count), interpolated
// within the bucket; +Inf counts as the last finite bound.
func quantile(b map[float64]float64, q float64) float64 {
	if len(b) == 0 {
		return 0
	}
	les := make([]float64, 0, len(b))
	for le := range b {
		les = append(les, le)
	}
	sort.Float64s(les)
	total := b[les[len(les)-1]]
	if total == 0 {
		return 0
	}
	rank, lower, below := q*total, 0.0, 0.0
	for _, le := range les {
		if c := b[le]; c >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			return lower + (rank-below)/math.Max(c-below, 1)*(le-lower)
		}
		lower, below = le, b[le]
	}
	return lower
}

func logf(v float64) float64 { return math.Log(v) }

func fetchBooks(base, token string) map[string]any {
	req, _ := http.NewRequest(http.MethodGet, base+"/api/ops/books", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return map[string]any{"error": resp.Status}
	}
	return out
}

var htmlReport = template.Must(template.New("r").Funcs(template.FuncMap{
	"bars": func(r *Report) template.HTML {
		// One horizontal bar chart per latency, log-scaled.
		var b strings.Builder
		b.WriteString(`<svg viewBox="0 0 720 300" width="720" height="300" role="img" aria-label="latency percentiles">`)
		names := []string{"connect", "confirm_accept", "reveal_lateness", "settle"}
		cols := []string{"p50", "p90", "p99", "p99.9", "max"}
		colors := []string{"#7ab8ff", "#7ff0b8", "#ffcc33", "#ff8a8c", "#c9a0ff"}
		maxv := 1.0
		for _, n := range names {
			maxv = max(maxv, r.Latency[n].Max)
		}
		scale := func(v float64) float64 { // log scale from 0.01 ms
			if v < 0.01 {
				v = 0.01
			}
			return 460 * (logf(v) - logf(0.01)) / (logf(maxv) - logf(0.01) + 1e-9)
		}
		for i, n := range names {
			p := r.Latency[n]
			vals := []float64{p.P50, p.P90, p.P99, p.P999, p.Max}
			y := 20 + i*70
			fmt.Fprintf(&b, `<text x="0" y="%d" fill="#ccd" font-size="12">%s</text>`, y-4, n)
			for j, v := range vals {
				fmt.Fprintf(&b, `<rect x="140" y="%d" width="%.1f" height="10" fill="%s"><title>%s %.2f ms</title></rect><text x="%.1f" y="%d" fill="#ccd" font-size="10">%s %.2f</text>`,
					y+j*11, scale(v), colors[j], cols[j], v, 145+scale(v), y+j*11+9, cols[j], v)
			}
		}
		b.WriteString(`</svg>`)
		return template.HTML(b.String())
	},
	"rate": func(r *Report) template.HTML {
		var b strings.Builder
		n := len(r.PerSecond)
		peak := float64(max(1, r.PeakPerSec))
		b.WriteString(`<svg viewBox="0 0 720 200" width="720" height="200" role="img" aria-label="games per second"><polyline fill="none" stroke="#ffcc33" stroke-width="2" points="`)
		for i, v := range r.PerSecond {
			fmt.Fprintf(&b, "%.1f,%.1f ", 30+690*float64(i)/float64(max(1, n-1)), 190-180*float64(v)/peak)
		}
		fmt.Fprintf(&b, `"/><text x="0" y="14" fill="#ccd" font-size="11">%d/s</text><text x="0" y="190" fill="#ccd" font-size="11">0</text></svg>`, r.PeakPerSec)
		return template.HTML(b.String())
	},
}).Parse(`<!doctype html><html lang="en"><meta charset="utf-8"><title>Keno load test</title>
<style>body{font-family:system-ui,sans-serif;background:#0c1024;color:#e9ecff;margin:2rem}table{border-collapse:collapse}td,th{padding:.3rem .6rem;border-bottom:1px solid #263066;text-align:left}.ok{color:#2bb673}.fail{color:#e5383b}section{margin:1.5rem 0}</style>
<h1>Keno Mystères load test</h1>
<p>{{.Started.Format "2006-01-02 15:04:05"}} — {{printf "%.1f" .Elapsed}} s, {{.Players}} active + {{.Idle}} idle players, {{.Games}} games ({{printf "%.0f" .GamesPerSec}}/s mean, {{.PeakPerSec}}/s peak)</p>
<section><h2>Checks</h2><table>{{range .Checks}}<tr><td class="{{if .OK}}ok{{else}}fail{{end}}">{{if .OK}}PASS{{else}}FAIL{{end}}</td><td>{{.What}}</td><td>{{.Goal}}</td><td>{{.Got}}</td></tr>{{end}}</table></section>
<section><h2>Latency percentiles (ms, log scale)</h2>{{bars .}}</section>
<section><h2>Games settled per second</h2>{{rate .}}</section>
<section><h2>Latency table (ms)</h2><table><tr><th></th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range $k, $p := .Latency}}<tr><td>{{$k}}</td><td>{{$p.Count}}</td><td>{{printf "%.2f" $p.P50}}</td><td>{{printf "%.2f" $p.P90}}</td><td>{{printf "%.2f" $p.P99}}</td><td>{{printf "%.2f" $p.P999}}</td><td>{{printf "%.2f" $p.Max}}</td></tr>{{end}}</table></section>
<section><h2>Errors</h2><p>unexpected: {{.Errors}}</p><p>expected refusals: {{.Expected}}</p></section>
<section><h2>Server</h2><p>RSS before {{.ServerBefore.RSS}} B, with idle players {{.ServerIdle.RSS}} B, after {{.ServerAfter.RSS}} B; {{printf "%.1f" .PerIdleKiB}} KiB per idle player; open-file limit {{.ServerAfter.OpenFiles}}</p></section>
<section><h2>Configuration</h2><pre>{{.Config}}</pre></section>
</html>`))
