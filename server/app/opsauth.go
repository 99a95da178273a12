package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The ops API takes its token in the Authorization header only, as
// "Bearer <token>": never in a URL, where proxies and browsers log it. The
// ops page, whose live feed is an EventSource (which cannot set headers),
// trades the token once for an HttpOnly, SameSite=Strict session cookie
// that only the read-only feed accepts.

const (
	opsCookie      = "keno_ops"
	opsSessionLife = 12 * time.Hour
)

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

func (a *App) validOpsToken(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(a.Cfg.OpsToken)) == 1
}

func unauthorized(w http.ResponseWriter, message string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="keno-ops"`)
	fail(w, http.StatusUnauthorized, "unauthorized", message)
}

// opsOnly requires the ops token as a bearer header.
func (a *App) opsOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		if !ok {
			unauthorized(w, "send the ops token as 'Authorization: Bearer <token>'")
			return
		}
		if !a.validOpsToken(tok) {
			unauthorized(w, "wrong ops token")
			return
		}
		h(w, r)
	}
}

// opsLogin trades the bearer token for a session cookie (POST /api/ops/login).
func (a *App) opsLogin(w http.ResponseWriter, r *http.Request) {
	exp := time.Now().Add(opsSessionLife).Unix()
	http.SetCookie(w, &http.Cookie{Name: opsCookie, Value: a.opsSession(exp), Path: "/", MaxAge: int(opsSessionLife.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: a.Cfg.Mode == "production"})
	w.WriteHeader(http.StatusNoContent)
}

func (a *App) opsSession(exp int64) string {
	s := strconv.FormatInt(exp, 10)
	m := hmac.New(sha256.New, []byte(a.Cfg.OpsToken))
	m.Write([]byte("ops-session." + s))
	return s + "." + hex.EncodeToString(m.Sum(nil))
}

// opsPage admits the bearer token or a live session cookie (the feed).
func (a *App) opsPage(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if tok, ok := bearer(r); ok && a.validOpsToken(tok) {
			h(w, r)
			return
		}
		if c, err := r.Cookie(opsCookie); err == nil {
			exp, _, _ := strings.Cut(c.Value, ".")
			n, err := strconv.ParseInt(exp, 10, 64)
			if err == nil && time.Now().Unix() < n && hmac.Equal([]byte(c.Value), []byte(a.opsSession(n))) {
				h(w, r)
				return
			}
		}
		unauthorized(w, "log in with the ops token first")
	}
}

// securityHeaders: every page and answer of the public listener says that
// it may not be framed, sniffed or leak its address, and pages may load
// nothing but their own origin's files and open sockets only to it.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}
