// Package app assembles the keno server: configuration, Redis, wallet,
// sessions, HTTP routes, background sweeper, graceful shutdown.
package app

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"keno/server/ratelimit"
	"keno/server/session"
	"keno/server/wallet"
)

// Config is everything a server needs, from flags and environment.
type Config struct {
	Addr        string // ADDR
	RedisURL    string // REDIS_URL; empty: embedded miniredis (dev only)
	Mode        string // MODE: dev or production
	Profile     string // PROFILE: human or fast (reveal pace)
	TokenKey    string // KENO_TOKEN_KEY: verifies player tokens
	SealKey     string // KENO_SEAL_KEY: seals the journal
	OpsToken    string // KENO_OPS_TOKEN: protects /ops and the ops API
	Grace       time.Duration
	ServerID    string // SERVER_ID: names this server in logs and ops figures
	LogPretty   bool
	LogLevel    string
	Session     session.Config
	Limits      ratelimit.Rules
	ReplicaAcks int           // REDIS_REPLICA_ACKS: replicas that must have each money write
	Wallet      wallet.Config // DEPOSIT_CAP, TICKET_MAX, LIMIT_RAISE_DELAY
	DrainGrace  time.Duration // shutdown: how long running reveals may take to reach a pause
	PprofAddr   string        // PPROF_ADDR: Go profiler on a separate (loopback) listener; empty: off
}

// Dev-mode defaults: fixed, so a restarted dev server still verifies its
// journals; production refuses to start with them.
const (
	devTokenKey = "dev-token-key-not-for-production"
	devSealKey  = "dev-seal-key-not-for-production!"
	devOpsToken = "dev-ops-token"
)

// ParseConfig reads flags (args) over environment variables over defaults.
func ParseConfig(args []string) (Config, error) {
	env := func(k, def string) string {
		if v, ok := os.LookupEnv(k); ok {
			return v
		}
		return def
	}
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.Addr, "addr", env("ADDR", "127.0.0.1:8080"), "listen address (ADDR)")
	fs.StringVar(&c.RedisURL, "redis", env("REDIS_URL", ""), "redis://host:port/db, unix:///path, or redis+cluster://h1:p1,h2:p2 (REDIS_URL); empty: embedded Redis (dev mode only)")
	fs.StringVar(&c.Mode, "mode", env("MODE", "dev"), "dev or production (MODE)")
	fs.StringVar(&c.Profile, "profile", env("PROFILE", "human"), "reveal pace: human or fast (PROFILE)")
	fs.StringVar(&c.TokenKey, "token-key", env("KENO_TOKEN_KEY", ""), "HMAC key for player tokens (KENO_TOKEN_KEY)")
	fs.StringVar(&c.SealKey, "seal-key", env("KENO_SEAL_KEY", ""), "HMAC key sealing the journal (KENO_SEAL_KEY)")
	fs.StringVar(&c.OpsToken, "ops-token", env("KENO_OPS_TOKEN", ""), "bearer token for /ops and the ops API (KENO_OPS_TOKEN)")
	fs.StringVar(&c.ServerID, "server-id", env("SERVER_ID", ""), "name of this server (SERVER_ID; default host:pid)")
	grace := fs.Duration("grace", envDuration("GRACE", 60*time.Second), "a disconnected player's game settles itself after this (GRACE)")
	fs.StringVar(&c.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (LOG_LEVEL)")
	fs.IntVar(&c.ReplicaAcks, "replica-acks", envInt("REDIS_REPLICA_ACKS", 0), "replicas that must confirm each money write before it is reported done (1 on a Redis Cluster with replicas) (REDIS_REPLICA_ACKS)")
	c.Wallet = wallet.DefaultConfig()
	fs.Int64Var(&c.Wallet.DefaultDepositCap, "deposit-cap", envInt64("DEPOSIT_CAP", c.Wallet.DefaultDepositCap), "weekly deposit cap in cents until a player sets one (DEPOSIT_CAP)")
	fs.Int64Var(&c.Wallet.TicketMax, "ticket-max", envInt64("TICKET_MAX", c.Wallet.TicketMax), "largest ticket total in cents (TICKET_MAX; the rules say 500 €)")
	fs.DurationVar(&c.Wallet.RaiseDelay, "limit-raise-delay", envDuration("LIMIT_RAISE_DELAY", c.Wallet.RaiseDelay), "delay before a raised limit applies (LIMIT_RAISE_DELAY)")
	connIP := fs.Int("conn-rate-ip", envInt("CONN_RATE_IP", 30), "WebSocket connection attempts per second per IP, burst twice that; 0 disables (load tests from one address) (CONN_RATE_IP)")
	lease := fs.Duration("lease", envDuration("LEASE_TTL", 30*time.Second), "ownership lease of a player's session; a crashed server's players are free after this (LEASE_TTL)")
	fs.StringVar(&c.PprofAddr, "pprof", env("PPROF_ADDR", ""), "serve the Go profiler (/debug/pprof) on this separate address, e.g. 127.0.0.1:6060; off when empty (PPROF_ADDR)")
	pretty := fs.String("log", env("LOG_FORMAT", "auto"), "log format: json, pretty, or auto (pretty on a terminal) (LOG_FORMAT)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch c.Profile {
	case "human":
		c.Session = session.HumanConfig()
	case "fast":
		c.Session = session.FastConfig()
	default:
		return c, fmt.Errorf("profile must be human or fast, not %q", c.Profile)
	}
	c.Limits = ratelimit.DefaultRules()
	c.Limits.ConnectsPerIP.Rate, c.Limits.ConnectsPerIP.Burst = *connIP, 2**connIP
	if c.Wallet.DefaultDepositCap <= 0 || c.Wallet.TicketMax <= 0 || c.Wallet.TicketMax > 50_000 || c.Wallet.RaiseDelay < 0 {
		return c, errors.New("deposit cap and ticket max must be positive, ticket max at most 50000 cents (500 €), raise delay not negative")
	}
	c.Grace = *grace
	c.Session.Grace = c.Grace
	c.Session.LeaseTTL = *lease
	c.DrainGrace = 10 * time.Second
	switch *pretty {
	case "pretty":
		c.LogPretty = true
	case "auto":
		fi, err := os.Stderr.Stat()
		c.LogPretty = err == nil && fi.Mode()&os.ModeCharDevice != 0
	}
	switch c.Mode {
	case "dev":
		c.Session.DevMode = true
		c.TokenKey = or(c.TokenKey, devTokenKey)
		c.SealKey = or(c.SealKey, devSealKey)
		c.OpsToken = or(c.OpsToken, devOpsToken)
	case "production":
		var missing []string
		for name, v := range map[string]string{"KENO_TOKEN_KEY": c.TokenKey, "KENO_SEAL_KEY": c.SealKey, "KENO_OPS_TOKEN": c.OpsToken, "REDIS_URL": c.RedisURL} {
			if v == "" {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return c, fmt.Errorf("production mode needs %s", strings.Join(missing, ", "))
		}
		if len(c.TokenKey) < 16 || len(c.SealKey) < 16 || len(c.OpsToken) < 16 {
			return c, errors.New("production keys and ops token must be at least 16 characters")
		}
	default:
		return c, fmt.Errorf("mode must be dev or production, not %q", c.Mode)
	}
	if c.ServerID == "" {
		host, _ := os.Hostname()
		c.ServerID = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	return c, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func envInt64(k string, def int64) int64 {
	if v, ok := os.LookupEnv(k); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

func envInt(k string, def int) int {
	if v, ok := os.LookupEnv(k); ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func envDuration(k string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(k); ok {
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	return def
}
