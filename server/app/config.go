// Package app assembles the keno server: configuration, Redis, wallet,
// sessions, HTTP routes, background sweeper, graceful shutdown.
package app

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"keno/server/auth"
	"keno/server/clientip"
	"keno/server/ratelimit"
	"keno/server/session"
	"keno/server/wallet"
)

// Config is everything a server needs, from flags and environment.
type Config struct {
	Addr         string     // ADDR
	RedisURL     string     // REDIS_URL; empty: embedded miniredis (dev only)
	Mode         string     // MODE: dev or production
	Profile      string     // PROFILE: human or fast (reveal pace)
	TokenKey     string     // KENO_TOKEN_KEY: verifies player tokens
	SealKey      string     // KENO_SEAL_KEY: seals the journal
	OpsToken     string     // KENO_OPS_TOKEN: protects /ops and the ops API (the operator role)
	TokenJWKS    string     // KENO_TOKEN_JWKS: the operator's JWKS (file or https URL) for RS256/ES256 tokens
	TokenKeys    []auth.Key // KENO_TOKEN_KEYS: id:secret,… — rotation (the first signs); else KENO_TOKEN_KEY as "k1"
	ViewerToken  string     // KENO_OPS_VIEWER_TOKEN: the viewer role (read only); none: no viewer
	Grace        time.Duration
	ServerID     string // SERVER_ID: names this server in logs and ops figures
	LogPretty    bool
	LogLevel     string
	Session      session.Config
	Limits       ratelimit.Rules
	ReplicaAcks  int           // REDIS_REPLICA_ACKS: replicas that must have each money write
	Wallet       wallet.Config // DEPOSIT_CAP, TICKET_MAX, LIMIT_RAISE_DELAY
	DrainDelay   time.Duration // DRAIN_DELAY: on SIGTERM, /readyz fails at once; the listener closes this much later
	DrainTimeout time.Duration // DRAIN_TIMEOUT: the whole shutdown, whatever the peers do
	HTTPIdle     time.Duration // an idle HTTP keep-alive connection is closed after this
	LogOutput    io.Writer     // where the logs go (os.Stderr unless a test says otherwise)
	ArchiveURL   string        // ARCHIVE_URL: postgres://… — the archive (required in production)
	HotWindow    time.Duration // HOT_WINDOW: what is younger stays in Redis
	ArchiveEvery time.Duration // ARCHIVE_EVERY: pause between the archiver's passes
	Archiver     bool          // ARCHIVER: this server competes for the archiver's lease
	AdminAddr    string        // ADMIN_ADDR: the operator's listener (metrics, ops page and API, cashier, profiler)
	// TrustedProxies: the load balancers whose X-Forwarded-For / Forwarded
	// headers name the client (TRUSTED_PROXIES, CIDRs); from anyone else
	// those headers are ignored.
	TrustedProxies []netip.Prefix
	// AllowedOrigins: host patterns of the pages that may open game
	// sockets besides the game's own origin (ALLOWED_ORIGINS).
	AllowedOrigins []string
	Operator       OperatorConfig // WALLET=seamless: the operator's wallet
}

// OperatorConfig is where the money lives: Redis (WALLET=redis, the
// default), or the operator's wallet (WALLET=seamless), called as
// protocol/OPERATOR.md says.
type OperatorConfig struct {
	Wallet   string        // WALLET: redis or seamless
	URL      string        // OPERATOR_URL: http(s)://host[:port][/prefix]
	Key      string        // OPERATOR_KEY: signs every call
	Currency string        // OPERATOR_CURRENCY: ISO 4217 code of the amounts (EUR)
	Timeout  time.Duration // OPERATOR_TIMEOUT: one call's limit
}

// Seamless reports whether the money lives at the operator.
func (o OperatorConfig) Seamless() bool { return o.Wallet == "seamless" }

// Dev-mode defaults: fixed, so a restarted dev server still verifies its
// journals; production refuses to start with them.
const (
	devTokenKey    = "dev-token-key-not-for-production"
	devSealKey     = "dev-seal-key-not-for-production!"
	devOpsToken    = "dev-ops-token"
	devViewerToken = "dev-viewer-token"
	devOperatorKey = "dev-operator-key-not-for-production"
)

// ParseConfig reads flags (args) over environment variables over defaults.
// A value that does not parse, or a setting that cannot run safely, stops
// the server at start with an error that names the variable.
func ParseConfig(args []string) (Config, error) {
	env := func(k, def string) string {
		if v, ok := os.LookupEnv(k); ok {
			return v
		}
		return def
	}
	var envErrs []error
	envInt := func(k string, def int) int {
		n, err := envNumber(k, int64(def))
		envErrs = append(envErrs, err)
		return int(n)
	}
	envInt64 := func(k string, def int64) int64 {
		n, err := envNumber(k, def)
		envErrs = append(envErrs, err)
		return n
	}
	envDuration := func(k string, def time.Duration) time.Duration {
		d, err := envDur(k, def)
		envErrs = append(envErrs, err)
		return d
	}
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.Addr, "addr", env("ADDR", "127.0.0.1:8080"), "listen address (ADDR)")
	fs.StringVar(&c.RedisURL, "redis", env("REDIS_URL", ""), "redis://host:port/db, unix:///path, or redis+cluster://h1:p1,h2:p2 (REDIS_URL); empty: embedded Redis (dev mode only)")
	fs.StringVar(&c.Mode, "mode", env("MODE", ""), "dev or production (MODE); required with REDIS_URL, dev without")
	fs.StringVar(&c.Profile, "profile", env("PROFILE", "human"), "reveal pace: human or fast (PROFILE)")
	fs.StringVar(&c.TokenKey, "token-key", env("KENO_TOKEN_KEY", ""), "HMAC key for player tokens, at least 32 bytes in production (KENO_TOKEN_KEY)")
	fs.StringVar(&c.SealKey, "seal-key", env("KENO_SEAL_KEY", ""), "HMAC key sealing the journal, at least 32 bytes in production (KENO_SEAL_KEY)")
	fs.StringVar(&c.TokenJWKS, "token-jwks", env("KENO_TOKEN_JWKS", ""), "the operator's JWKS, a file or an https:// URL (refreshed): RS256 and ES256 player tokens verify with its keys (KENO_TOKEN_JWKS)")
	tokenKeys := fs.String("token-keys", env("KENO_TOKEN_KEYS", ""), "player-token keys for rotation, id:secret,id:secret (the first signs; all verify); overrides KENO_TOKEN_KEY (KENO_TOKEN_KEYS)")
	fs.StringVar(&c.ViewerToken, "ops-viewer-token", env("KENO_OPS_VIEWER_TOKEN", ""), "token of the console's viewer role (read only), at least 32 bytes in production (KENO_OPS_VIEWER_TOKEN; dev default dev-viewer-token)")
	fs.StringVar(&c.OpsToken, "ops-token", env("KENO_OPS_TOKEN", ""), "bearer token for /ops and the ops API, at least 32 bytes in production (KENO_OPS_TOKEN)")
	fs.StringVar(&c.ServerID, "server-id", env("SERVER_ID", ""), "name of this server (SERVER_ID; default host:pid)")
	fs.StringVar(&c.ArchiveURL, "archive", env("ARCHIVE_URL", ""), "PostgreSQL archive, postgres://user@host:port/db (ARCHIVE_URL); required in production; empty in dev: everything stays in Redis")
	fs.DurationVar(&c.HotWindow, "hot-window", envDuration("HOT_WINDOW", 24*time.Hour), "journal, games and ledger younger than this stay in Redis; older move to the archive (HOT_WINDOW)")
	fs.BoolVar(&c.Archiver, "archiver", env("ARCHIVER", "on") != "off", "run an archiver (one works at a time, under a Redis lease): on or off (ARCHIVER; off beside a dedicated keno-server archive)")
	fs.DurationVar(&c.ArchiveEvery, "archive-every", envDuration("ARCHIVE_EVERY", 5*time.Second), "pause between the archiver's passes (ARCHIVE_EVERY)")
	hold := fs.Duration("result-hold", envDuration("RESULT_HOLD", 0), "how long a settled game of a ticket stays on screen before the next starts (RESULT_HOLD; default 3s with PROFILE=human, 0 with fast)")
	grace := fs.Duration("grace", envDuration("GRACE", 60*time.Second), "a disconnected player's game settles itself after this (GRACE)")
	fs.StringVar(&c.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (LOG_LEVEL)")
	fs.IntVar(&c.ReplicaAcks, "replica-acks", envInt("REDIS_REPLICA_ACKS", 0), "replicas that must confirm each money write before it is reported done (1 on a Redis Cluster with replicas) (REDIS_REPLICA_ACKS)")
	c.Wallet = wallet.DefaultConfig()
	fs.Int64Var(&c.Wallet.DefaultDepositCap, "deposit-cap", envInt64("DEPOSIT_CAP", c.Wallet.DefaultDepositCap), "weekly deposit cap in cents until a player sets one (DEPOSIT_CAP)")
	fs.Int64Var(&c.Wallet.TicketMax, "ticket-max", envInt64("TICKET_MAX", c.Wallet.TicketMax), "largest ticket total in cents (TICKET_MAX; the rules say 500 €)")
	fs.DurationVar(&c.Wallet.RaiseDelay, "limit-raise-delay", envDuration("LIMIT_RAISE_DELAY", c.Wallet.RaiseDelay), "delay before a raised limit applies (LIMIT_RAISE_DELAY)")
	connIP := fs.Int("conn-rate-ip", envInt("CONN_RATE_IP", 30), "WebSocket connection attempts per second per IP, burst twice that; 0 disables (load tests from one address) (CONN_RATE_IP)")
	maxInPlay := fs.Int("max-games-in-play", envInt("MAX_GAMES_IN_PLAY", 0), "most games in play on this server at once, its tested capacity; beyond it new tickets are refused busy (the server also lowers its own limit while reveals run late) (MAX_GAMES_IN_PLAY; 0: no fixed ceiling)")
	lease := fs.Duration("lease", envDuration("LEASE_TTL", 30*time.Second), "ownership lease of a player's session; a crashed server's players are free after this (LEASE_TTL)")
	fs.StringVar(&c.AdminAddr, "admin-addr", env("ADMIN_ADDR", "127.0.0.1:9090"), "the operator's listener: /metrics, the live-ops page, /api/ops/* (cashier), /debug/pprof; keep it off the public network (ADMIN_ADDR)")
	drainDelay := fs.Duration("drain-delay", envDuration("DRAIN_DELAY", 0), "on SIGTERM /readyz fails at once and new tickets are refused; the listener closes this much later, once the load balancer has seen it (DRAIN_DELAY; 5s behind one)")
	drainTimeout := fs.Duration("drain-timeout", envDuration("DRAIN_TIMEOUT", 25*time.Second), "a shutdown ends within this, whatever the peers do; under Kubernetes' 30 s grace (DRAIN_TIMEOUT)")
	pretty := fs.String("log", env("LOG_FORMAT", "json"), "log format: json (JSON lines, the default), pretty (for a person at a terminal), or auto (pretty on a terminal) (LOG_FORMAT)")
	proxies := fs.String("trusted-proxies", env("TRUSTED_PROXIES", ""), "comma-separated CIDRs of load balancers whose X-Forwarded-For / Forwarded headers are believed (TRUSTED_PROXIES)")
	origins := fs.String("allowed-origins", env("ALLOWED_ORIGINS", ""), "comma-separated host patterns (example.com, *.example.com) of pages allowed to open game sockets besides the game's own origin (ALLOWED_ORIGINS)")
	fs.StringVar(&c.Operator.Wallet, "wallet", env("WALLET", "redis"), "where the money lives: redis (this server's wallet) or seamless (the operator's wallet, called as protocol/OPERATOR.md says) (WALLET)")
	fs.StringVar(&c.Operator.URL, "operator-url", env("OPERATOR_URL", ""), "with WALLET=seamless: the operator wallet's base URL, https:// in production (OPERATOR_URL)")
	fs.StringVar(&c.Operator.Key, "operator-key", env("OPERATOR_KEY", ""), "with WALLET=seamless: the HMAC key signing every call to the operator, at least 32 bytes in production (OPERATOR_KEY)")
	fs.StringVar(&c.Operator.Currency, "operator-currency", env("OPERATOR_CURRENCY", "EUR"), "with WALLET=seamless: the currency of every amount, ISO 4217 (OPERATOR_CURRENCY)")
	fs.DurationVar(&c.Operator.Timeout, "operator-timeout", envDuration("OPERATOR_TIMEOUT", 2*time.Second), "with WALLET=seamless: one call's limit; a debit unanswered by then is rolled back (OPERATOR_TIMEOUT)")
	if err := errors.Join(envErrs...); err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch c.Profile {
	case "human":
		c.Session = session.HumanConfig()
	case "fast":
		c.Session = session.FastConfig()
	default:
		return c, fmt.Errorf("PROFILE must be human or fast, not %q", c.Profile)
	}
	// Given (flag or variable), the hold overrides the profile's.
	holdGiven := os.Getenv("RESULT_HOLD") != ""
	fs.Visit(func(f *flag.Flag) { holdGiven = holdGiven || f.Name == "result-hold" })
	if *hold < 0 {
		return c, fmt.Errorf("RESULT_HOLD must not be negative, got %s", *hold)
	}
	if holdGiven {
		c.Session.ResultHold = *hold
	}
	if c.Session.ResultHold > time.Minute {
		return c, fmt.Errorf("RESULT_HOLD must be at most 1m, got %s", c.Session.ResultHold)
	}
	c.Limits = ratelimit.DefaultRules()
	if *connIP < 0 {
		return c, fmt.Errorf("CONN_RATE_IP must not be negative, got %d", *connIP)
	}
	c.Limits.ConnectsPerIP.Rate, c.Limits.ConnectsPerIP.Burst = *connIP, 2**connIP
	switch {
	case c.Wallet.DefaultDepositCap <= 0 || c.Wallet.DefaultDepositCap > wallet.MaxAmount:
		return c, fmt.Errorf("DEPOSIT_CAP must be 1 to %d cents, got %d", wallet.MaxAmount, c.Wallet.DefaultDepositCap)
	case c.Wallet.TicketMax <= 0 || c.Wallet.TicketMax > 50_000:
		return c, fmt.Errorf("TICKET_MAX must be 1 to 50000 cents (500 €), got %d", c.Wallet.TicketMax)
	case c.Wallet.RaiseDelay < 0:
		return c, fmt.Errorf("LIMIT_RAISE_DELAY must not be negative, got %s", c.Wallet.RaiseDelay)
	case *grace <= 0:
		return c, fmt.Errorf("GRACE must be positive, got %s", *grace)
	case *lease < time.Second:
		return c, fmt.Errorf("LEASE_TTL must be at least 1s, got %s", *lease)
	case *drainDelay < 0 || *drainTimeout <= *drainDelay:
		return c, fmt.Errorf("DRAIN_TIMEOUT (%s) must be longer than DRAIN_DELAY (%s), which must not be negative", *drainTimeout, *drainDelay)
	case c.HotWindow < time.Second:
		return c, fmt.Errorf("HOT_WINDOW must be at least 1s, got %s", c.HotWindow)
	case c.ArchiveEvery < 10*time.Millisecond:
		return c, fmt.Errorf("ARCHIVE_EVERY must be at least 10ms, got %s", c.ArchiveEvery)
	case c.ReplicaAcks < 0:
		return c, fmt.Errorf("REDIS_REPLICA_ACKS must not be negative, got %d", c.ReplicaAcks)
	case *maxInPlay < 0:
		return c, fmt.Errorf("MAX_GAMES_IN_PLAY must not be negative, got %d", *maxInPlay)
	}
	if c.AdminAddr == c.Addr && !strings.HasSuffix(c.Addr, ":0") {
		return c, fmt.Errorf("ADMIN_ADDR must differ from ADDR (%s): the admin surfaces stay off the public port", c.Addr)
	}
	var err error
	if c.TrustedProxies, err = parseCIDRs(*proxies); err != nil {
		return c, fmt.Errorf("TRUSTED_PROXIES: %w", err)
	}
	if c.AllowedOrigins, err = parseOrigins(*origins); err != nil {
		return c, fmt.Errorf("ALLOWED_ORIGINS: %w", err)
	}
	c.Session.ClientIP = clientip.Resolver{Trusted: c.TrustedProxies}
	c.Session.OriginPatterns = c.AllowedOrigins
	c.Grace = *grace
	c.Session.Grace = c.Grace
	c.Session.LeaseTTL = *lease
	c.Wallet.LeaseTTL = *lease // the owner's money operations extend it too
	c.Session.MaxInPlay = *maxInPlay
	c.DrainDelay, c.DrainTimeout = *drainDelay, *drainTimeout
	c.HTTPIdle = 30 * time.Second
	switch *pretty {
	case "pretty":
		c.LogPretty = true
	case "auto":
		fi, err := os.Stderr.Stat()
		c.LogPretty = err == nil && fi.Mode()&os.ModeCharDevice != 0
	case "json":
	default:
		return c, fmt.Errorf("LOG_FORMAT must be json, pretty or auto, not %q", *pretty)
	}
	if _, err := zerolog.ParseLevel(c.LogLevel); err != nil || c.LogLevel == "" {
		return c, fmt.Errorf("LOG_LEVEL must be debug, info, warn or error, not %q", c.LogLevel)
	}
	if *tokenKeys != "" {
		keys, err := auth.ParseKeys(*tokenKeys)
		if err != nil {
			return c, fmt.Errorf("KENO_TOKEN_KEYS: %w", err)
		}
		c.TokenKeys = keys
		c.TokenKey = string(keys[0].Secret) // the signing key, for the checks below
	}
	if c.Mode == "" {
		if c.RedisURL != "" {
			// A real Redis may hold real money: dev mode (open login, client
			// deposits, published keys) against it is never a default.
			return c, errors.New("MODE must be set (dev or production) when REDIS_URL is given")
		}
		c.Mode = "dev"
	}
	switch c.Mode {
	case "dev":
		c.Session.DevMode = true
		c.TokenKey = or(c.TokenKey, devTokenKey)
		c.SealKey = or(c.SealKey, devSealKey)
		c.OpsToken = or(c.OpsToken, devOpsToken)
		c.ViewerToken = or(c.ViewerToken, devViewerToken)
	case "production":
		if err := productionKeys(c); err != nil {
			return c, err
		}
		if c.ArchiveURL == "" {
			// Without it Redis keeps every game for ever: memory runs out,
			// and the law's years of archive are not kept.
			return c, errors.New("ARCHIVE_URL must be set in production (postgres://…): the archive of every game and account event")
		}
	default:
		return c, fmt.Errorf("MODE must be dev or production, not %q", c.Mode)
	}
	if len(c.TokenKeys) == 0 {
		c.TokenKeys = []auth.Key{{ID: "k1", Secret: []byte(c.TokenKey)}}
	}
	if c.Mode == "production" && strings.HasPrefix(c.TokenJWKS, "http://") {
		return c, errors.New("KENO_TOKEN_JWKS must be a file or an https:// URL in production")
	}
	if err := checkOperator(&c); err != nil {
		return c, err
	}
	c.Session.Currency = c.Operator.Currency // EUR unless the operator's wallet says otherwise
	if c.ServerID == "" {
		host, _ := os.Hostname()
		c.ServerID = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	return c, nil
}

// productionKeyMin is the shortest key production takes: 256 bits, as
// HMAC-SHA256 wants.
const productionKeyMin = 32

// productionKeys refuses what cannot be run with real money: a missing
// Redis, missing or short keys, or the dev keys published in this source.
func productionKeys(c Config) error {
	var missing []string
	for _, kv := range [][2]string{{"KENO_TOKEN_KEY", c.TokenKey}, {"KENO_SEAL_KEY", c.SealKey}, {"KENO_OPS_TOKEN", c.OpsToken}, {"REDIS_URL", c.RedisURL}} {
		if kv[1] == "" {
			missing = append(missing, kv[0])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("production mode needs %s", strings.Join(missing, ", "))
	}
	for _, kv := range [][2]string{{"KENO_TOKEN_KEY", c.TokenKey}, {"KENO_SEAL_KEY", c.SealKey}, {"KENO_OPS_TOKEN", c.OpsToken}} {
		switch v := kv[1]; {
		case v == devTokenKey || v == devSealKey || v == devOpsToken:
			return fmt.Errorf("%s is a dev key published in the source: production needs a secret of its own", kv[0])
		case len(v) < productionKeyMin:
			return fmt.Errorf("%s must be at least %d bytes in production (got %d)", kv[0], productionKeyMin, len(v))
		}
	}
	for _, k := range c.TokenKeys {
		if len(k.Secret) < productionKeyMin || string(k.Secret) == devTokenKey {
			return fmt.Errorf("KENO_TOKEN_KEYS: key %q must be a secret of its own of at least %d bytes in production", k.ID, productionKeyMin)
		}
	}
	if c.TokenKey == c.SealKey || c.TokenKey == c.OpsToken || c.SealKey == c.OpsToken {
		return errors.New("KENO_TOKEN_KEY, KENO_SEAL_KEY and KENO_OPS_TOKEN must be three different secrets")
	}
	switch v := c.ViewerToken; {
	case v == "":
	case v == devViewerToken || len(v) < productionKeyMin:
		return fmt.Errorf("KENO_OPS_VIEWER_TOKEN must be a secret of its own of at least %d bytes in production", productionKeyMin)
	case v == c.OpsToken || v == c.TokenKey || v == c.SealKey:
		return errors.New("KENO_OPS_VIEWER_TOKEN must differ from the other secrets")
	}
	return nil
}

// checkOperator validates the wallet mode and, in seamless mode, the
// operator's address, key and currency.
func checkOperator(c *Config) error {
	o := &c.Operator
	switch o.Wallet {
	case "redis":
		return nil
	case "seamless":
	default:
		return fmt.Errorf("WALLET must be redis or seamless, not %q", o.Wallet)
	}
	u, err := url.Parse(o.URL)
	switch {
	case o.URL == "":
		return errors.New("OPERATOR_URL must be set with WALLET=seamless (the operator wallet's base URL)")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("OPERATOR_URL must be an http(s):// URL, not %q", o.URL)
	case u.User != nil || u.RawQuery != "":
		return errors.New("OPERATOR_URL must not carry credentials or a query: calls are signed with OPERATOR_KEY")
	case c.Mode == "production" && u.Scheme != "https":
		return errors.New("OPERATOR_URL must be https:// in production")
	case o.Timeout < 10*time.Millisecond || o.Timeout > time.Minute:
		return fmt.Errorf("OPERATOR_TIMEOUT must be 10ms to 1m, got %s", o.Timeout)
	case len(o.Currency) != 3 || strings.ToUpper(o.Currency) != o.Currency:
		return fmt.Errorf("OPERATOR_CURRENCY must be an ISO 4217 code such as EUR, not %q", o.Currency)
	}
	if c.Mode == "dev" {
		o.Key = or(o.Key, devOperatorKey)
	}
	switch {
	case o.Key == "":
		return errors.New("OPERATOR_KEY must be set with WALLET=seamless")
	case c.Mode == "production" && (o.Key == devOperatorKey || len(o.Key) < productionKeyMin):
		return fmt.Errorf("OPERATOR_KEY must be a secret of its own of at least %d bytes in production", productionKeyMin)
	case c.Mode == "production" && (o.Key == c.TokenKey || o.Key == c.SealKey || o.Key == c.OpsToken):
		return errors.New("OPERATOR_KEY must differ from the other secrets")
	}
	return nil
}

func parseCIDRs(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			if a, aerr := netip.ParseAddr(f); aerr == nil { // a single address
				p, err = a.Prefix(a.BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR (e.g. 10.0.0.0/8) or an address", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func parseOrigins(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		if _, err := path.Match(f, ""); err != nil || strings.Contains(f, "/") {
			return nil, fmt.Errorf("%q is not a host pattern (example.com, *.example.com, host:port)", f)
		}
		out = append(out, f)
	}
	return out, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func envNumber(k string, def int64) (int64, error) {
	v, ok := os.LookupEnv(k)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return def, fmt.Errorf("%s must be a whole number, not %q", k, v)
	}
	return n, nil
}

func envDur(k string, def time.Duration) (time.Duration, error) {
	v, ok := os.LookupEnv(k)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return def, fmt.Errorf("%s must be a duration such as 30s or 5m, not %q", k, v)
	}
	return d, nil
}
