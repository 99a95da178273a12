package app

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"keno/engine"
	"keno/server/redisinfo"
	"keno/server/session"
)

// Snapshot is what the live-ops page shows, once a second.
type Snapshot struct {
	At            int64   `json:"at"`
	Server        string  `json:"server"`
	Online        int     `json:"online"`         // this server
	OnlineCluster int     `json:"online_cluster"` // every live server
	Servers       int     `json:"servers"`
	GamesPerSec   float64 `json:"games_per_sec"`         // this server, last second
	GamesPerSecCl float64 `json:"games_per_sec_cluster"` // every live server
	StakesPerMin  int64   `json:"stakes_per_min"`        // cents, last 60 s
	WinsPerMin    int64   `json:"wins_per_min"`
	OpenGames     int64   `json:"open_games"`      // unsettled, cluster-wide
	InPlay        int64   `json:"games_in_play"`   // this server
	AdmitLimit    int64   `json:"admission_limit"` // games this server allows in play now; -1: no limit

	// Observed RTP (this server, since start) and its 95% confidence
	// half-width; the theoretical range spans every pick count and strategy.
	RTPObserved float64   `json:"rtp_observed"`
	RTPHalfCI   float64   `json:"rtp_half_ci"`
	RTPGames    int64     `json:"rtp_games"`
	RTPMin      float64   `json:"rtp_theory_min"`
	RTPMax      float64   `json:"rtp_theory_max"`
	RTPCluster  float64   `json:"rtp_cluster"` // Σ wins / Σ stakes of all servers
	RTPByPicks  []PickRTP `json:"rtp_by_picks"`

	RevealP50  float64 `json:"reveal_p50_ms"` // last 60 s
	RevealP99  float64 `json:"reveal_p99_ms"`
	AcceptP50  float64 `json:"accept_p50_ms"`
	AcceptP99  float64 `json:"accept_p99_ms"`
	ErrorsPerS float64 `json:"errors_per_sec"`
	RedisErrs  float64 `json:"redis_errors_per_sec"`

	// WALLET=seamless: this server's calls to the operator's wallet over
	// the last minute, and the share refused or unanswered (the calls
	// owed: GET /api/ops/operator).
	OperatorCallsPerS float64 `json:"operator_calls_per_sec,omitempty"`
	OperatorFailed    float64 `json:"operator_failed,omitempty"`
	Seamless          bool    `json:"seamless,omitempty"`

	BigWins []session.BigWin `json:"big_wins"`
	Redis   RedisState       `json:"redis"`

	Maintenance string `json:"maintenance,omitempty"` // the message while in maintenance

	// GGR (stakes − wins, cents) of the whole cluster over the last hour
	// and the last 24 hours this server has watched.
	GGRHour int64 `json:"ggr_hour"`
	GGRDay  int64 `json:"ggr_day"`

	// Since this server started: Stop-or-Continue offered per game, taken
	// per offer, Extra played per game; and, over the last minute, the
	// errors sent by code and the refusals by code/reason.
	SoCOfferRate     float64          `json:"soc_offer_rate"`
	SoCContinueRate  float64          `json:"soc_continue_rate"`
	ExtraRate        float64          `json:"extra_rate"`
	ErrorsByCode     map[string]int64 `json:"errors_by_code,omitempty"`
	RefusalsByReason map[string]int64 `json:"refusals_by_reason,omitempty"`
}

// PickRTP is the observed RTP of one pick count against its exact range.
type PickRTP struct {
	Picks     int     `json:"picks"`
	Observed  float64 `json:"observed"`
	HalfCI    float64 `json:"half_ci"`
	Games     int64   `json:"games"`
	TheoryMin float64 `json:"theory_min"`
	TheoryMax float64 `json:"theory_max"`
}

// RedisState is the health of Redis as seen from this server.
type RedisState struct {
	OK        bool    `json:"ok"`
	Kind      string  `json:"kind"` // redis-server, Redis Cluster, or embedded
	PingMS    float64 `json:"ping_ms"`
	Nodes     int     `json:"nodes"`
	UsedMem   string  `json:"used_memory"`
	OpsPerSec int64   `json:"ops_per_sec"`
	Clients   int64   `json:"clients"`
	Error     string  `json:"error,omitempty"`
}

// OpsFeed computes snapshots and fans them out to the ops pages.
type OpsFeed struct {
	a *App

	mu      sync.Mutex
	last    Snapshot
	subs    map[chan []byte]struct{}
	hour    []point   // the charts' last hour, one point a second, kept here so a reload loses nothing
	history []sample  // one a second, newest last, 61 kept
	ggr     ggrWindow // the cluster's GGR per minute over a day
}

type sample struct {
	at                        time.Time
	games, stakes, wins       float64
	errors, redisErrors       float64
	opCalls, opFailed         float64 // calls to the operator's wallet, and those not ok
	socOffered, socCont, xtra float64
	errorsBy, refusalsBy      map[string]float64 // by code, by code/reason
	reveal, accept            []bucket
}

type bucket struct {
	le    float64
	count uint64
}

func newOpsFeed(a *App) *OpsFeed { return &OpsFeed{a: a, subs: map[chan []byte]struct{}{}} }

// heartbeat is a server's contribution to the cluster-wide figures.
type heartbeat struct {
	At     int64   `json:"at"`
	Online int     `json:"online"`
	GPS    float64 `json:"gps"`
	Stakes float64 `json:"stakes"` // cents since the server started
	Win    float64 `json:"wins"`
}

func (f *OpsFeed) run(ctx context.Context) {
	session.Every(ctx, time.Second, func() {
		snap := f.compute(ctx)
		b, _ := json.Marshal(snap)
		f.mu.Lock()
		f.last = snap
		f.hour = append(f.hour, pointOf(snap))
		if len(f.hour) > 3600 {
			f.hour = f.hour[len(f.hour)-3600:]
		}
		for ch := range f.subs {
			select {
			case ch <- b:
			default: // a slow page skips a frame
			}
		}
		f.mu.Unlock()
	})
}

// ggrWindow sums the cluster's stakes and wins per minute over a day,
// from each server's running totals (a server that restarts starts again
// from zero: its next total is taken whole).
type ggrWindow struct {
	last    map[string][2]float64 // server → its last totals seen
	minutes [1440][3]int64        // minute of the day → [unix minute, stakes, wins]
}

func (g *ggrWindow) add(server string, stakes, wins float64) {
	if g.last == nil {
		g.last = map[string][2]float64{}
	}
	prev, seen := g.last[server]
	g.last[server] = [2]float64{stakes, wins}
	if !seen {
		return // its totals so far belong to before we watched
	}
	ds, dw := stakes-prev[0], wins-prev[1]
	if ds < 0 || dw < 0 { // restarted
		ds, dw = stakes, wins
	}
	m := time.Now().Unix() / 60
	b := &g.minutes[m%1440]
	if b[0] != m {
		*b = [3]int64{m, 0, 0}
	}
	b[1] += int64(ds)
	b[2] += int64(dw)
}

func (g *ggrWindow) sums(now time.Time) (hour, day int64) {
	m := now.Unix() / 60
	for _, b := range g.minutes {
		if age := m - b[0]; b[0] > 0 && age < 1440 {
			day += b[1] - b[2]
			if age < 60 {
				hour += b[1] - b[2]
			}
		}
	}
	return hour, day
}

// point is one second of the charts: [unix ms, players online, games/s,
// RTP observed, its band's low and high, reveal p99, accept p99].
type point [8]float64

func pointOf(s Snapshot) point {
	return point{float64(s.At), float64(s.OnlineCluster), s.GamesPerSecCl, s.RTPObserved, s.RTPObserved - s.RTPHalfCI,
		s.RTPObserved + s.RTPHalfCI, s.RevealP99, s.AcceptP99}
}

// Last returns the latest snapshot.
func (f *OpsFeed) Last() Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func (f *OpsFeed) compute(ctx context.Context) Snapshot {
	a := f.a
	now := time.Now()
	s := Snapshot{At: now.UnixMilli(), Server: a.Cfg.ServerID, Online: a.Hub.Online()}
	cur := f.gather(now)
	f.history = append(f.history, cur)
	if len(f.history) > 61 {
		f.history = f.history[len(f.history)-61:]
	}
	if n := len(f.history); n >= 2 {
		prev := f.history[n-2]
		dt := cur.at.Sub(prev.at).Seconds()
		s.GamesPerSec = (cur.games - prev.games) / dt
		s.ErrorsPerS = (cur.errors - prev.errors) / dt
		s.RedisErrs = (cur.redisErrors - prev.redisErrors) / dt
		first := f.history[0]
		s.StakesPerMin = int64(cur.stakes - first.stakes)
		s.WinsPerMin = int64(cur.wins - first.wins)
		s.RevealP50, s.RevealP99 = quantileMS(first.reveal, cur.reveal, 0.5), quantileMS(first.reveal, cur.reveal, 0.99)
		s.AcceptP50, s.AcceptP99 = quantileMS(first.accept, cur.accept, 0.5), quantileMS(first.accept, cur.accept, 0.99)
		s.ErrorsByCode, s.RefusalsByReason = minute(first.errorsBy, cur.errorsBy), minute(first.refusalsBy, cur.refusalsBy)
		if calls := cur.opCalls - first.opCalls; calls > 0 {
			s.OperatorCallsPerS = calls / cur.at.Sub(first.at).Seconds()
			s.OperatorFailed = (cur.opFailed - first.opFailed) / calls
		}
	}
	s.Seamless = a.Cfg.Operator.Seamless()
	if cur.games > 0 {
		s.SoCOfferRate, s.ExtraRate = cur.socOffered/cur.games, cur.xtra/cur.games
	}
	if cur.socOffered > 0 {
		s.SoCContinueRate = cur.socCont / cur.socOffered
	}
	s.RTPObserved, s.RTPHalfCI, s.RTPGames = observed(a.Hub.Events.RTP())
	s.RTPMin, s.RTPMax = theoryRange(0)
	for p, sums := range a.Hub.Events.RTPByPicks() {
		if p < engine.MinPicks || sums.N < 2 {
			continue
		}
		r := PickRTP{Picks: p}
		r.Observed, r.HalfCI, r.Games = observed(sums)
		r.TheoryMin, r.TheoryMax = theoryRange(p)
		s.RTPByPicks = append(s.RTPByPicks, r)
	}

	// Cluster-wide figures: every server publishes a heartbeat in Redis.
	hb, _ := json.Marshal(heartbeat{At: s.At, Online: s.Online, GPS: s.GamesPerSec, Stakes: cur.stakes, Win: cur.wins})
	all, wins, _ := a.Store.Heartbeat(ctx, a.Cfg.ServerID, hb, 10)
	var stakesCl, winsCl float64
	for id, v := range all {
		var h heartbeat
		if json.Unmarshal([]byte(v), &h) != nil || now.UnixMilli()-h.At > 10_000 {
			a.Store.ForgetServer(ctx, id) // a server gone quiet
			continue
		}
		s.Servers++
		s.OnlineCluster += h.Online
		s.GamesPerSecCl += h.GPS
		stakesCl += h.Stakes
		winsCl += h.Win
		f.ggr.add(id, h.Stakes, h.Win)
	}
	s.GGRHour, s.GGRDay = f.ggr.sums(now)
	if stakesCl > 0 {
		s.RTPCluster = winsCl / stakesCl
	}
	// Abandoned games whose grace ended over a minute ago and that no
	// sweeper has settled yet: the recovery backlog.
	if open, backlog, err := a.Store.Recovery().Counts(ctx, now.Add(-time.Minute)); err == nil {
		s.OpenGames = open
		a.Metrics.RecoveryBacklog.Set(float64(backlog))
	}
	for _, w := range wins {
		var bw session.BigWin
		if json.Unmarshal([]byte(w), &bw) == nil {
			s.BigWins = append(s.BigWins, bw)
		}
	}
	s.Redis = f.redisState(ctx)
	s.Maintenance = f.a.Hub.Maintenance()
	s.InPlay, s.AdmitLimit = f.a.Hub.Admission()
	return s
}

// gather reads this server's counters and histograms from its registry.
func (f *OpsFeed) gather(now time.Time) sample {
	out := sample{at: now}
	mfs, err := f.a.Metrics.Registry.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "keno_games_settled_total":
			out.games = sumCounters(mf)
		case "keno_stakes_cents_total":
			out.stakes = sumCounters(mf)
		case "keno_wins_cents_total":
			out.wins = sumCounters(mf)
		case "keno_errors_total":
			out.errors = sumCounters(mf)
			out.errorsBy = byLabels(mf)
		case "keno_refusals_total":
			out.refusalsBy = byLabels(mf)
		case "keno_soc_offered_total":
			out.socOffered = sumCounters(mf)
		case "keno_soc_continued_total":
			out.socCont = sumCounters(mf)
		case "keno_extra_played_total":
			out.xtra = sumCounters(mf)
		case "keno_redis_errors_total":
			out.redisErrors = sumCounters(mf)
		case "keno_operator_calls_total":
			for _, m := range mf.GetMetric() {
				out.opCalls += m.GetCounter().GetValue()
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" && l.GetValue() != "ok" {
						out.opFailed += m.GetCounter().GetValue()
					}
				}
			}
		case "keno_reveal_lateness_seconds":
			out.reveal = buckets(mf)
		case "keno_confirm_accept_seconds":
			out.accept = buckets(mf)
		}
	}
	return out
}

// byLabels sums a counter family by its label values ("code" or
// "code/reason").
func byLabels(mf *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range mf.GetMetric() {
		var k []string
		for _, l := range m.GetLabel() {
			if l.GetValue() != "" {
				k = append(k, l.GetValue())
			}
		}
		out[strings.Join(k, "/")] += m.GetCounter().GetValue()
	}
	return out
}

// minute is what each key of a counter map added over the window.
func minute(first, cur map[string]float64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range cur {
		if d := int64(v - first[k]); d > 0 {
			out[k] = d
		}
	}
	return out
}

func sumCounters(mf *dto.MetricFamily) float64 {
	var sum float64
	for _, m := range mf.GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

func buckets(mf *dto.MetricFamily) []bucket {
	if len(mf.GetMetric()) == 0 {
		return nil
	}
	var out []bucket
	for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
		out = append(out, bucket{b.GetUpperBound(), b.GetCumulativeCount()})
	}
	return out
}

// quantileMS estimates a quantile (ms) of the observations between two
// cumulative histogram readings, interpolating inside the bucket.
func quantileMS(old, cur []bucket, q float64) float64 {
	if len(cur) == 0 {
		return 0
	}
	delta := func(i int) float64 {
		d := float64(cur[i].count)
		if i < len(old) {
			d -= float64(old[i].count)
		}
		return d
	}
	total := delta(len(cur) - 1)
	if total <= 0 {
		return 0
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i := range cur {
		c := delta(i)
		if c >= rank {
			frac := (rank - below) / math.Max(c-below, 1)
			return 1000 * (lower + frac*(cur[i].le-lower))
		}
		lower, below = cur[i].le, c
	}
	return 1000 * cur[len(cur)-1].le
}

var (
	theoryOnce         sync.Once
	theoryLo, theoryHi [engine.MaxPicks + 1]float64 // by pick count; [0]: all
)

// theoryRange is the lowest and highest exact RTP over every pick count,
// stake and strategy: the band an honest game's observed RTP converges into.
// theoryRange is the exact RTP's range over strategies (always stop,
// always continue) and stakes, for a pick count (0: all of them).
func theoryRange(picks int) (float64, float64) {
	theoryOnce.Do(func() {
		for p := range theoryLo {
			theoryLo[p], theoryHi[p] = math.Inf(1), math.Inf(-1)
		}
		for _, s := range engine.Default().ComputePAR().Sheets {
			for _, r := range []*big.Rat{s.RTPStop, s.RTPContinue} {
				x, _ := r.Float64()
				for _, p := range []int{0, s.Picks} {
					theoryLo[p], theoryHi[p] = math.Min(theoryLo[p], x), math.Max(theoryHi[p], x)
				}
			}
		}
	})
	return theoryLo[picks], theoryHi[picks]
}

// observed is the mean of win/stake and its 95 % confidence half-width.
func observed(s session.RTPSums) (mean, halfCI float64, n int64) {
	if s.N < 2 {
		return 0, 0, s.N
	}
	mean = s.Sum / float64(s.N)
	variance := math.Max(0, s.SumSq/float64(s.N)-mean*mean)
	return mean, 1.96 * math.Sqrt(variance/float64(s.N)), s.N
}

func (f *OpsFeed) redisState(ctx context.Context) RedisState {
	var st RedisState
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	if err := f.a.Redis.Ping(ctx).Err(); err != nil {
		st.Error = err.Error()
		return st
	}
	st.OK, st.PingMS = true, float64(time.Since(t0).Microseconds())/1000
	if f.a.embedded != nil {
		// miniredis has no INFO: say what it is rather than show blanks.
		st.Nodes, st.UsedMem, st.Kind = 1, "in this process", "embedded (dev only: lost at exit)"
		st.Clients = int64(f.a.embedded.CurrentConnectionCount())
		return st
	}
	st.Kind = "redis-server"
	if _, ok := f.a.Redis.(*redis.ClusterClient); ok {
		st.Kind = "Redis Cluster"
	}
	var (
		mu           sync.Mutex
		used, maxMem float64
	)
	defer func() {
		if st.Nodes > 0 {
			f.a.Metrics.RedisUsedMem.Set(used)
			f.a.Metrics.RedisMaxMem.Set(maxMem)
		}
	}()
	forEachInfo(ctx, f.a.Redis, func(info string) {
		mu.Lock()
		defer mu.Unlock()
		st.Nodes++
		for k, v := range redisinfo.Fields(info) {
			switch k {
			case "used_memory_human":
				if st.UsedMem == "" {
					st.UsedMem = v
				} else {
					st.UsedMem += " + " + v
				}
			case "used_memory":
				n, _ := strconv.ParseFloat(v, 64)
				used += n
			case "maxmemory":
				n, _ := strconv.ParseFloat(v, 64)
				maxMem += n
			case "instantaneous_ops_per_sec":
				n, _ := strconv.ParseInt(v, 10, 64)
				st.OpsPerSec += n
			case "connected_clients":
				n, _ := strconv.ParseInt(v, 10, 64)
				st.Clients += n
			}
		}
	})
	return st
}

// serveSSE streams snapshots as Server-Sent Events.
func (f *OpsFeed) serveSSE(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	ch := make(chan []byte, 4)
	f.mu.Lock()
	f.subs[ch] = struct{}{}
	first, _ := json.Marshal(f.last)
	hour, _ := json.Marshal(f.hour)
	f.mu.Unlock()
	fmt.Fprintf(w, "event: history\ndata: %s\n\n", hour) // the charts' last hour first
	defer func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}()
	fmt.Fprintf(w, "data: %s\n\n", first)
	flusher.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-ch:
			fmt.Fprintf(w, "data: %s\n\n", b)
			flusher.Flush()
		}
	}
}

// forEachInfo runs fn on the INFO text of every master (or the one server).
func forEachInfo(ctx context.Context, rdb redis.UniversalClient, fn func(string)) {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			fn(n.Info(ctx).Val())
			return nil
		})
		return
	}
	fn(rdb.Info(ctx).Val())
}
