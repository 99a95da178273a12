package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	neturl "net/url"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/klauspost/compress/gzhttp"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	clientjs "keno/client-js"
	"keno/engine"
	"keno/server/archive"
	"keno/server/auth"
	"keno/server/metrics"
	"keno/server/operator"
	"keno/server/ratelimit"
	"keno/server/seamless"
	"keno/server/session"
	"keno/server/wallet"
)

// App is one running keno server.
type App struct {
	Cfg      Config
	Log      zerolog.Logger
	Redis    redis.UniversalClient
	Store    *wallet.Store
	Hub      *session.Hub
	Signer   *auth.Signer
	Metrics  *metrics.Metrics
	Ops      *OpsFeed
	Archive  *archive.Archive // nil without ARCHIVE_URL
	Archiver *archive.Archiver

	embedded *miniredis.Miniredis
	started  time.Time
}

// New connects to Redis and assembles the server (it does not listen yet).
func New(cfg Config) (*App, error) {
	a := &App{Cfg: cfg, started: time.Now()}
	a.Log = newLogger(cfg)
	rdb, embedded, err := Connect(cfg.RedisURL, cfg.Mode == "dev")
	if err != nil {
		return nil, err
	}
	a.Redis, a.embedded = rdb, embedded
	if embedded != nil {
		a.Log.Warn().Str("addr", embedded.Addr()).Msg("no REDIS_URL: using an embedded in-memory Redis (dev only; money is lost at exit)")
	}
	if a.Store, err = NewStore(rdb, cfg); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	d, err := a.Store.CheckDurability(ctx)
	cancel()
	switch {
	case err != nil && cfg.Mode == "production":
		rdb.Close()
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	case err != nil:
		a.Log.Warn().Err(err).Msg("dev mode: acknowledged money is NOT durable on this Redis (production would refuse to start)")
		cfg.Session.NotDurable = true // and every client is told so in its welcome
	default:
		a.Log.Info().Str("durability", d.String()).Msg("every money write is durable before it is acknowledged")
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	folded, err := a.Store.FoldDailyLosses(ctx)
	cancel()
	if err != nil {
		rdb.Close()
		return nil, fmt.Errorf("REDIS_URL: folding the day's loss counters of an earlier build into the accounts: %w", err)
	}
	if folded > 0 {
		a.Log.Info().Int("players", folded).Msg("upgrade: today's loss counters of the earlier build moved into the accounts")
	}
	if a.Signer, err = auth.NewKeyring(cfg.TokenKeys); err != nil {
		return nil, err
	}
	if cfg.TokenJWKS != "" {
		// A URL's keys are refreshed in the background for the process's life.
		if err := a.Signer.UseJWKS(context.Background(), cfg.TokenJWKS); err != nil {
			return nil, fmt.Errorf("KENO_TOKEN_JWKS: %w", err)
		}
	}
	a.Metrics = metrics.New()
	a.Metrics.OpenFilesLimit.Set(float64(raiseOpenFiles(a.Log)))
	a.Metrics.WatchRedisPool(func() metrics.PoolStats {
		p := rdb.PoolStats()
		return metrics.PoolStats{Total: p.TotalConns, Idle: p.IdleConns, Waits: p.WaitCount, Timeouts: p.Timeouts,
			Waited: time.Duration(p.WaitDurationNs)}
	})
	a.Metrics.WatchBatches(a.Store.Batches)
	if err := a.openArchive(); err != nil {
		rdb.Close()
		return nil, err
	}
	limiter := ratelimit.New(rdb, cfg.Limits)
	go rulesJSON() // the rules screen's figures, ready before anyone asks
	a.Hub = session.NewHub(cfg.Session, engine.Default(), a.Store, a.Signer, limiter, a.Metrics, a.Log)
	if cfg.Operator.Seamless() {
		a.Hub.UseBank(a.seamlessBank())
		a.Log.Info().Str("operator", cfg.Operator.URL).Msg("WALLET=seamless: the money lives in the operator's wallet")
	}
	a.Ops = newOpsFeed(a)
	return a, nil
}

// openArchive connects the PostgreSQL archive (ARCHIVE_URL): reads fall
// back to it, and this server's archiver competes for the lease.
func (a *App) openArchive() error {
	if a.Cfg.ArchiveURL == "" {
		a.Log.Warn().Msg("no ARCHIVE_URL: everything stays in Redis (dev only; memory grows with every game)")
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	arch, err := archive.Open(ctx, a.Cfg.ArchiveURL)
	if err != nil {
		return fmt.Errorf("ARCHIVE_URL: %w", err)
	}
	v, _ := arch.Version(ctx)
	a.Archive = arch
	a.Store.SetCold(arch)
	a.Archiver = &archive.Archiver{Store: a.Store, Archive: arch, Hot: a.Cfg.HotWindow, Every: a.Cfg.ArchiveEvery,
		Log: a.Log.With().Str("part", "archiver").Logger(), Metrics: a.Metrics, ID: a.Cfg.ServerID}
	a.Log.Info().Int("schema", v).Dur("hot_window", a.Cfg.HotWindow).Msg("archive: PostgreSQL; Redis keeps the hot window")
	return nil
}

// NewStore opens the wallet over rdb with the configured seal key.
func NewStore(rdb redis.UniversalClient, cfg Config) (*wallet.Store, error) {
	wc := cfg.Wallet
	if wc == (wallet.Config{}) { // a Config built by hand rather than parsed
		wc = wallet.DefaultConfig()
	}
	wc.ReplicaAcks = cfg.ReplicaAcks
	return wallet.New(rdb, []byte(cfg.SealKey), wc)
}

// redisBuffer: go-redis's default buffers are large; our commands and
// replies are a few KiB, and hundreds of pooled connections × 2 buffers add up.
const redisBuffer = 16 << 10

// redisPool: connections are opened as needed. Commands wait for a free
// one when the pool is exhausted, which at 10 000 players happened in the
// second of a garbage collection (goroutines hold theirs until scheduled
// to read the reply) and added tens of milliseconds to confirms at 64.
// A redis:// URL may set its own (?pool_size=).
const redisPool = 256

// Connect opens the Redis named by url: redis://, rediss://, unix://, or
// redis+cluster://host:port,host:port for a Redis Cluster. An empty url
// starts an embedded miniredis when allowed (dev mode).
func Connect(url string, allowEmbedded bool) (redis.UniversalClient, *miniredis.Miniredis, error) {
	switch {
	case url == "" && allowEmbedded:
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			return nil, nil, err
		}
		return redis.NewClient(&redis.Options{Addr: m.Addr(), PoolSize: redisPool, ReadBufferSize: redisBuffer, WriteBufferSize: redisBuffer,
			ContextTimeoutEnabled: true}), m, nil
	case url == "":
		return nil, nil, errors.New("REDIS_URL is required")
	case strings.HasPrefix(url, "redis+cluster://") || strings.HasPrefix(url, "rediss+cluster://"):
		opt, err := clusterOptions(url)
		if err != nil {
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		if opt.PoolSize == 0 {
			opt.PoolSize = redisPool
		}
		if opt.MaxRedirects == 0 {
			opt.MaxRedirects = 8
		}
		if opt.ReadTimeout == 0 {
			opt.ReadTimeout, opt.WriteTimeout = 2*time.Second, 2*time.Second
		}
		opt.ReadBufferSize, opt.WriteBufferSize = redisBuffer, redisBuffer
		opt.ContextTimeoutEnabled = true
		return redis.NewClusterClient(opt), nil, nil
	default:
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		if opt.PoolSize == 0 {
			opt.PoolSize = redisPool
		}
		opt.ReadBufferSize, opt.WriteBufferSize = redisBuffer, redisBuffer
		opt.ContextTimeoutEnabled = true // every call's deadline is honoured
		return redis.NewClient(opt), nil, nil
	}
}

// clusterOptions reads redis+cluster://[user:pass@]h1:p1,h2:p2[?options]
// (rediss+cluster:// for TLS, as managed clouds give them) with go-redis's
// own parser, which takes the first node in the host and the others as
// addr= options.
func clusterOptions(raw string) (*redis.ClusterOptions, error) {
	scheme, rest, _ := strings.Cut(raw, "+cluster://")
	userinfo, hosts := "", rest
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		userinfo, hosts = rest[:at+1], rest[at+1:]
	}
	hosts, query, _ := strings.Cut(hosts, "?")
	hosts = strings.TrimSuffix(hosts, "/")
	nodes := strings.Split(hosts, ",")
	if hosts == "" || slices.Contains(nodes, "") {
		return nil, fmt.Errorf("a cluster URL lists its nodes as host:port,host:port")
	}
	q, err := neturl.ParseQuery(query)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes[1:] {
		q.Add("addr", n)
	}
	return redis.ParseClusterURL(scheme + "://" + userinfo + nodes[0] + "?" + q.Encode())
}

// raiseOpenFiles lifts the soft open-file limit to the hard one (each
// player is a socket) and returns the limit in force.
func raiseOpenFiles(log zerolog.Logger) uint64 {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0
	}
	if r.Cur < r.Max {
		r.Cur = r.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
		syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	}
	log.Info().Uint64("open_files_limit", r.Cur).Msg("open-file limit (about one per connected player)")
	return r.Cur
}

// PublicHandler is what players reach: the game's page, its socket and
// the health checks — nothing an operator uses.
func (a *App) PublicHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /ws", a.Hub)
	// The page's files and the rules go compressed to browsers that ask
	// (a third of the bytes on a phone's first load); the socket never is.
	files := gzhttp.GzipHandler(http.FileServerFS(clientjs.Files))
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/ops") { // the live-ops page is on the admin listener
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", a.ready)
	mux.HandleFunc("POST /api/dev/login", a.devLogin)
	mux.Handle("GET /api/rules", gzhttp.GzipHandler(http.HandlerFunc(rules)))
	return a.requestID(securityHeaders(mux))
}

// AdminHandler is the operator's side, on its own listener (ADMIN_ADDR,
// loopback by default): metrics, the live-ops page and its feed, the
// cashier and ops API, and the Go profiler.
func (a *App) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /", http.FileServerFS(clientjs.Files))
	mux.Handle("GET /{$}", http.RedirectHandler("/ops.html", http.StatusFound))
	mux.HandleFunc("GET /healthz", healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.Metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST /api/ops/login", a.opsLogin)
	mux.HandleFunc("POST /api/ops/deposit", a.opsOnly(a.cashier("deposit")))
	mux.HandleFunc("POST /api/ops/withdraw", a.opsOnly(a.cashier("withdraw")))
	mux.HandleFunc("GET /api/ops/books", a.opsOnly(a.opsBooks))
	mux.HandleFunc("GET /api/ops/operator", a.console(roleViewer, a.opsOperator))
	mux.HandleFunc("GET /ops/feed", a.opsPage(a.Ops.serveSSE))
	mux.HandleFunc("GET /ops/session", a.opsPage(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"role": roleOf(r)})
	}))
	mux.HandleFunc("GET /api/ops/players/{player}", a.console(roleViewer, a.opsPlayer))
	mux.HandleFunc("POST /api/ops/players/{player}/{action}", a.console(roleOperator, a.opsPlayerAction))
	mux.HandleFunc("GET /api/ops/maintenance", a.console(roleViewer, a.opsMaintenance))
	mux.HandleFunc("POST /api/ops/maintenance", a.console(roleOperator, a.opsMaintenance))
	mux.HandleFunc("DELETE /api/ops/maintenance", a.console(roleOperator, a.opsMaintenance))
	mux.HandleFunc("POST /api/ops/broadcast", a.console(roleOperator, a.opsBroadcast))
	mux.HandleFunc("POST /api/ops/sessions/{sid}/revoke", a.console(roleOperator, a.opsRevoke))
	mux.HandleFunc("POST /api/ops/gc", a.opsOnly(a.opsGC))
	mux.HandleFunc("GET /api/ops/games/{id}", a.archived("recall", a.opsRecall))
	mux.HandleFunc("GET /api/ops/reports/daily", a.archived("report_daily", a.opsDaily))
	mux.HandleFunc("GET /api/ops/players/{player}/statement", a.archived("statement", a.opsStatement))
	mux.HandleFunc("GET /api/ops/export", a.archived("export", a.opsExport))
	// The profiler: internals, and CPU while it runs — admin side only.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return a.requestID(a.accessLog(securityHeaders(mux)))
}

// healthz: the process is up (liveness; readiness is /readyz).
func healthz(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) }

func (a *App) ready(w http.ResponseWriter, r *http.Request) {
	if a.Hub.Draining() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	// A deadline go-redis honours (ContextTimeoutEnabled): a hung Redis
	// fails the check within a second instead of its socket timeouts.
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if err := a.Redis.Ping(ctx).Err(); err != nil {
		http.Error(w, "redis: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte("ready\n"))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// devLogin issues a 12-hour token for ?player= (dev mode only): the
// stand-in for the operator's own login.
func (a *App) devLogin(w http.ResponseWriter, r *http.Request) {
	if a.Cfg.Mode != "dev" {
		fail(w, http.StatusNotFound, "not_found", "dev login is disabled in production")
		return
	}
	player := r.URL.Query().Get("player")
	if !wallet.ValidPlayer(player) {
		fail(w, http.StatusBadRequest, "invalid_player", wallet.ErrBadPlayer.Reason)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"player": player, "token": a.Signer.Issue(player, time.Now().Add(12*time.Hour))})
}

// opsGC collects garbage and returns free memory to the OS, so that a
// following /metrics read shows the steady-state footprint (the load
// tester measures memory per connected player this way).
func (a *App) opsGC(w http.ResponseWriter, r *http.Request) {
	runtime.GC() // twice: stacks shrink by half per collection, as they
	runtime.GC() // would over a few minutes of a long-running server
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	writeJSON(w, http.StatusOK, map[string]any{"heap_inuse": m.HeapInuse, "stack_inuse": m.StackInuse, "sys": m.Sys, "goroutines": runtime.NumGoroutine()})
}

func (a *App) opsBooks(w http.ResponseWriter, r *http.Request) {
	b, err := a.Store.Books(r.Context())
	if err != nil {
		a.Log.Error().Err(err).Msg("books")
		fail(w, http.StatusServiceUnavailable, "unavailable", "the wallet could not be read")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"books": b, "balanced": b.Balanced()})
}

// Run serves the game on public and the operator's side on admin until
// ctx ends, then shuts down gracefully.
func (a *App) Run(ctx context.Context, public, admin net.Listener) error {
	bg, stop := context.WithCancel(context.Background())
	defer stop()
	hubDone := make(chan struct{})
	go func() { a.Hub.Run(bg); close(hubDone) }()
	go a.Ops.run(bg)
	archived := make(chan struct{})
	go func() {
		if a.Archiver != nil && a.Cfg.Archiver {
			a.Archiver.Run(bg)
		}
		close(archived)
	}()
	// Idle keep-alive connections go after HTTPIdle (a WebSocket, once
	// upgraded, is the session's to time out: see Hub.Reap).
	srv := &http.Server{Handler: a.PublicHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: a.Cfg.HTTPIdle}
	adm := &http.Server{Handler: a.AdminHandler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: a.Cfg.HTTPIdle}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(public) }()
	go func() { errc <- adm.Serve(admin) }()
	defer adm.Close() // its feed's streams end with it
	a.Log.Info().Str("addr", public.Addr().String()).Str("admin", admin.Addr().String()).Str("mode", a.Cfg.Mode).
		Str("profile", a.Cfg.Profile).Msg("keno server listening")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Draining: not ready any more (the load balancer stops sending new
	// players), no new ticket (server_draining: the client reconnects
	// elsewhere), then — after DRAIN_DELAY — the listeners close and every
	// session is drained in parallel, all within DRAIN_TIMEOUT.
	a.Log.Info().Dur("delay", a.Cfg.DrainDelay).Dur("timeout", a.Cfg.DrainTimeout).Msg("draining: not ready, no new tickets")
	sctx, cancel := context.WithTimeout(context.Background(), a.Cfg.DrainTimeout)
	defer cancel()
	a.Hub.StopTickets()
	select {
	case <-time.After(a.Cfg.DrainDelay):
	case <-sctx.Done():
	}
	srv.Shutdown(sctx) // stops accepting; hijacked WebSockets are ours to close
	a.Hub.Shutdown(sctx)
	stop()
	<-hubDone
	<-archived
	if a.Archive != nil {
		a.Archive.Close()
	}
	a.Close()
	return nil
}

// Close releases Redis (and the embedded one).
func (a *App) Close() {
	if a.Archive != nil {
		a.Archive.Close()
	}
	a.Redis.Close()
	if a.embedded != nil {
		a.embedded.Close()
	}
}

// seamlessBank is the operator's wallet as the hub's bank (WALLET=seamless).
func (a *App) seamlessBank() *seamless.Bank {
	o := a.Cfg.Operator
	client := operator.NewClient(o.URL, []byte(o.Key), o.Currency, o.Timeout)
	client.Observe = func(path, outcome string, took time.Duration) {
		call := strings.TrimPrefix(path, "/wallet/")
		a.Metrics.OperatorCalls.WithLabelValues(call, outcome).Inc()
		a.Metrics.OperatorSeconds.WithLabelValues(call).Observe(took.Seconds())
	}
	// A debit stays in flight past the call's limit and the bet's own
	// retries before any other server may roll it back.
	return seamless.New(a.Store, client, 4*o.Timeout+10*time.Second, a.Log)
}
