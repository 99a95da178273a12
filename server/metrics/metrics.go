// Package metrics holds the server's Prometheus metrics. Each server has
// its own registry (tests run several servers in one process).
package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"keno/server/buildinfo"
)

// Metrics are every figure the server exports at /metrics.
type Metrics struct {
	Registry *prometheus.Registry
	names    map[string]bool // every metric family this server can export

	Sessions       prometheus.Gauge
	Connects       *prometheus.CounterVec // result: ok, unauthorized, rate_limited, …
	GamesStarted   *prometheus.CounterVec // picks, stake
	GamesSettled   *prometheus.CounterVec // picks, stake
	StakesCents    prometheus.Counter
	WinsCents      prometheus.Counter
	SoCOffered     prometheus.Counter
	SoCContinued   prometheus.Counter
	ExtraPlayed    prometheus.Counter
	RevealLateness prometheus.Histogram
	ConfirmAccept  prometheus.Histogram
	RedisOp        *prometheus.HistogramVec // op
	RedisErrors    *prometheus.CounterVec   // op
	Refusals       *prometheus.CounterVec   // code, reason
	Errors         *prometheus.CounterVec   // code: every error message sent
	Resumed        prometheus.Counter
	Recovered      prometheus.Counter
	TakenOver      prometheus.Counter
	OpenFilesLimit prometheus.Gauge
	RedisUsedMem   prometheus.Gauge // bytes, summed over the masters (INFO memory)
	RedisMaxMem    prometheus.Gauge // bytes; 0: no maxmemory set
	BigWins        prometheus.Counter
	RTPObserved    prometheus.GaugeFunc // wins / stakes since this server started

	Busy        prometheus.Counter // tickets refused busy: the server keeps the games in play on time first
	GamesInPlay prometheus.Gauge
	AdmitLimit  prometheus.Gauge // games allowed in play (+Inf: no limit)

	RecoveryBacklog prometheus.Gauge // abandoned games due over a minute ago, not yet settled (cluster-wide)

	// The operator's wallet (WALLET=seamless).
	OperatorCalls   *prometheus.CounterVec   // call (balance, debit, credit, rollback), outcome (ok, refused, unanswered)
	OperatorSeconds *prometheus.HistogramVec // call

	// The archiver (PostgreSQL), on the server holding its lease.
	ArchiveLag      prometheus.Gauge
	ArchiveBacklog  prometheus.Gauge
	ArchiveMoved    *prometheus.CounterVec // kind: entries, games, ledger
	ArchiveFailures prometheus.Counter
}

// New registers every metric in a fresh registry, with the Go and process
// collectors.
func New() *Metrics {
	r := prometheus.NewRegistry()
	names := map[string]bool{}
	f := factory{r, names}
	m := &Metrics{
		Registry:       r,
		names:          names,
		Sessions:       f.gauge("keno_sessions_connected", "Players connected to this server."),
		Connects:       f.counterVec("keno_connects_total", "WebSocket connection attempts by result.", "result"),
		GamesStarted:   f.counterVec("keno_games_started_total", "Games accepted, by pick count and stake (cents).", "picks", "stake"),
		GamesSettled:   f.counterVec("keno_games_settled_total", "Games settled, by pick count and stake (cents).", "picks", "stake"),
		StakesCents:    f.counter("keno_stakes_cents_total", "Stakes accepted, cents."),
		WinsCents:      f.counter("keno_wins_cents_total", "Wins paid, cents."),
		SoCOffered:     f.counter("keno_soc_offered_total", "Stop-or-Continue offers."),
		SoCContinued:   f.counter("keno_soc_continued_total", "Stop-or-Continue offers taken (continue)."),
		ExtraPlayed:    f.counter("keno_extra_played_total", "Extra games played."),
		RevealLateness: f.histogram("keno_reveal_lateness_seconds", "Delay of each timed reveal message behind its schedule.", prometheus.ExponentialBuckets(0.0005, 2, 14)),
		ConfirmAccept:  f.histogram("keno_confirm_accept_seconds", "Time from a confirm to its accepted reply.", prometheus.ExponentialBuckets(0.0005, 2, 14)),
		RedisOp:        f.histogramVec("keno_redis_op_seconds", "Latency of wallet operations in Redis.", prometheus.ExponentialBuckets(0.0001, 2, 16), "op"),
		RedisErrors:    f.counterVec("keno_redis_errors_total", "Failed Redis operations.", "op"),
		Refusals:       f.counterVec("keno_refusals_total", "Bets and deposits refused, by code and reason.", "code", "reason"),
		Errors:         f.counterVec("keno_errors_total", "Error messages sent to clients, by code.", "code"),
		Resumed:        f.counter("keno_games_resumed_total", "Games resumed after a reconnection."),
		Recovered:      f.counter("keno_games_recovered_total", "Abandoned games settled by the recovery sweeper."),
		TakenOver:      f.counter("keno_sessions_taken_over_total", "Sessions ended by a newer connection of the same player."),
		OpenFilesLimit: f.gauge("keno_open_files_limit", "The open-file limit (RLIMIT_NOFILE) this process runs under."),
		RedisUsedMem:   f.gauge("keno_redis_used_memory_bytes", "Redis used_memory summed over the masters, as this server last read it."),
		RedisMaxMem:    f.gauge("keno_redis_maxmemory_bytes", "Redis maxmemory summed over the masters (0: none set)."),
		BigWins:        f.counter("keno_big_wins_total", "Wins of at least 100 times the stake."),

		Busy:        f.counter("keno_busy_refusals_total", "Tickets refused busy (retry later) to keep the games in play on time."),
		GamesInPlay: f.gauge("keno_games_in_play", "Games accepted and not yet finished on this server."),
		AdmitLimit:  f.gauge("keno_admission_limit_games", "Games this server allows in play now (+Inf until reveals run late or bets slow down)."),

		OperatorCalls:   f.counterVec("keno_operator_calls_total", "Calls to the operator's wallet (WALLET=seamless) by call and outcome: ok, refused (a typed refusal), unanswered (timeout, 5xx, reset: rolled back or sent again).", "call", "outcome"),
		OperatorSeconds: f.histogramVec("keno_operator_call_seconds", "Latency of calls to the operator's wallet.", prometheus.ExponentialBuckets(0.0005, 2, 14), "call"),
		RecoveryBacklog: f.gauge("keno_recovery_backlog_games", "Abandoned games whose grace period ended over a minute ago and that no server has settled yet (cluster-wide)."),
		ArchiveLag:      f.gauge("keno_archive_lag_seconds", "How long since everything older than the hot window was last archived (0: caught up)."),
		ArchiveBacklog:  f.gauge("keno_archive_backlog_entries", "Journal entries due for the archive that the last pass could not move."),
		ArchiveMoved:    f.counterVec("keno_archive_moved_total", "Rows moved from Redis to the archive, by kind (entries, games, ledger).", "kind"),
		ArchiveFailures: f.counter("keno_archive_failures_total", "Archive passes or players that failed (archive down, chain broken)."),
	}
	bi := buildinfo.Read()
	f.gaugeVec("keno_build_info", "Always 1: the running build's version, commit and Go version.", "version", "revision", "goversion").
		WithLabelValues(bi.Version, bi.Revision, bi.Go).Set(1)
	m.RTPObserved = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "keno_rtp_observed",
		Help: "Wins paid / stakes accepted since this server started (the exact RTP is 66.8–70.8 %)."}, m.observedRTP)
	names["keno_rtp_observed"] = true
	r.MustRegister(m.RTPObserved)
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if mfs, err := r.Gather(); err == nil { // the Go and process collectors' families
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
	}
	return m
}

// Exports reports whether the server exports a metric family of this name
// (histogram series may be named with _bucket, _sum or _count).
func (m *Metrics) Exports(name string) bool {
	for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && m.names[base] {
			return true
		}
	}
	return false
}

func (m *Metrics) observedRTP() float64 {
	var stakes, wins dto.Metric
	m.StakesCents.Write(&stakes)
	m.WinsCents.Write(&wins)
	if s := stakes.GetCounter().GetValue(); s > 0 {
		return wins.GetCounter().GetValue() / s
	}
	return 0
}

// PoolStats is what the Redis client reports of its connection pool.
type PoolStats struct {
	Total, Idle, Waits, Timeouts uint32
	Waited                       time.Duration
}

// WatchRedisPool exports the Redis client's connection pool, read at each
// scrape: waits for a free connection show a pool too small for the load
// before the latency of every operation does.
func (m *Metrics) WatchRedisPool(stats func() PoolStats) {
	gauge := func(name, help string, labels prometheus.Labels, v func(PoolStats) float64) {
		m.names[name] = true
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels},
			func() float64 { return v(stats()) }))
	}
	counter := func(name, help string, v func(PoolStats) float64) {
		m.counterFunc(name, help, func() float64 { return v(stats()) })
	}
	const conns = "keno_redis_pool_connections"
	gauge(conns, "Connections of the Redis client's pool, by state.", prometheus.Labels{"state": "open"},
		func(p PoolStats) float64 { return float64(p.Total) })
	gauge(conns, "Connections of the Redis client's pool, by state.", prometheus.Labels{"state": "idle"},
		func(p PoolStats) float64 { return float64(p.Idle) })
	counter("keno_redis_pool_waits_total", "Redis commands that waited for a free pooled connection.",
		func(p PoolStats) float64 { return float64(p.Waits) })
	counter("keno_redis_pool_wait_seconds_total", "Time Redis commands spent waiting for a free pooled connection.",
		func(p PoolStats) float64 { return p.Waited.Seconds() })
	counter("keno_redis_pool_timeouts_total", "Redis commands that gave up waiting for a pooled connection.",
		func(p PoolStats) float64 { return float64(p.Timeouts) })
}

// WatchBatches exports the group commit's counts (wallet.Store.Batches),
// read at each scrape: the money scripts sent and the pipelines they left
// in — their ratio is the mean batch, how much Redis's fsyncs are shared.
func (m *Metrics) WatchBatches(stats func() (batches, scripts int64)) {
	m.counterFunc("keno_redis_script_batches_total", "Pipelines of money scripts sent to Redis (the group commit's batches).",
		func() float64 { b, _ := stats(); return float64(b) })
	m.counterFunc("keno_redis_scripts_total", "Money scripts sent to Redis; divided by keno_redis_script_batches_total, the mean batch.",
		func() float64 { _, n := stats(); return float64(n) })
}

// counterFunc registers a counter read at each scrape.
func (m *Metrics) counterFunc(name, help string, v func() float64) {
	m.names[name] = true
	m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, v))
}

// ObserveRedis records one wallet operation's latency and error.
func (m *Metrics) ObserveRedis(op string, start time.Time, err error) {
	m.RedisOp.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		m.RedisErrors.WithLabelValues(op).Inc()
	}
}

// Game labels.
func Labels(picks int, stake int64) []string {
	return []string{strconv.Itoa(picks), strconv.FormatInt(stake, 10)}
}

type factory struct {
	r     *prometheus.Registry
	names map[string]bool
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	f.names[name] = true
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	f.r.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	f.names[name] = true
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.r.MustRegister(g)
	return g
}

func (f factory) counter(name, help string) prometheus.Counter {
	f.names[name] = true
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.r.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	f.names[name] = true
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.r.MustRegister(c)
	return c
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	f.names[name] = true
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	f.r.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	f.names[name] = true
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.r.MustRegister(h)
	return h
}
