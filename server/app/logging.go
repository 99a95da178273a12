package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// Logs an on-call engineer can use: JSON lines with millisecond
// timestamps, a request id on every HTTP request (kept from X-Request-Id
// when a proxy set one, echoed back), the session and player on every
// line of a WebSocket session, an access log of the admin listener, the
// audit lines of every operator action, and go-redis's own lines too.

// msTimes sets zerolog's time format once, before any logger writes.
var msTimes sync.Once

func newLogger(cfg Config) zerolog.Logger {
	msTimes.Do(func() { zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00" })
	out := cfg.LogOutput
	if out == nil {
		out = os.Stderr
	}
	var l zerolog.Logger
	if cfg.LogPretty {
		l = zerolog.New(zerolog.ConsoleWriter{Out: out, TimeFormat: "15:04:05.000"})
	} else {
		l = zerolog.New(out)
	}
	level, err := zerolog.ParseLevel(cfg.LogLevel)
	if err != nil || cfg.LogLevel == "" {
		level = zerolog.InfoLevel
	}
	l = l.Level(level).With().Timestamp().Str("server", cfg.ServerID).Logger()
	redis.SetLogger(redisLog{l.With().Str("part", "go-redis").Logger()})
	return l
}

// redisLog routes go-redis's internal messages (pool, reconnection,
// cluster topology) into the server's log.
type redisLog struct{ l zerolog.Logger }

func (r redisLog) Printf(_ context.Context, format string, v ...any) {
	r.l.Warn().Msg(fmt.Sprintf(format, v...))
}

type requestIDKey struct{}

var goodRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID gives every request an id (the proxy's X-Request-Id when it
// is sane, else a new one), returns it in the answer, and puts a logger
// carrying it in the request's context.
func (a *App) requestID(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !goodRequestID.MatchString(id) {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		l := a.Log.With().Str("request_id", id).Logger()
		h.ServeHTTP(w, r.WithContext(l.WithContext(context.WithValue(r.Context(), requestIDKey{}, id))))
	})
}

// reqLog is the request's logger (with its id).
func reqLog(r *http.Request) *zerolog.Logger { return zerolog.Ctx(r.Context()) }

// accessLog writes one line per request of the admin listener: who
// (address), what (method, path — never the query, which could hold what
// should not be logged), the answer and how long it took.
func (a *App) accessLog(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: 200}
		h.ServeHTTP(sw, r)
		reqLog(r).Info().Str("access", "admin").Str("method", r.Method).Str("path", r.URL.Path).Int("status", sw.status).
			Int64("bytes", sw.bytes).Float64("ms", float64(time.Since(start).Microseconds())/1000).Str("remote", r.RemoteAddr).Msg("admin request")
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }
func (w *statusWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush keeps the live feed (server-sent events) streaming through the log.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
