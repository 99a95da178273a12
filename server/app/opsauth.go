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

// Roles of the console: a viewer reads (KPIs, players, games, reports);
// an operator also acts (kick, block, limits, maintenance, broadcast,
// cashier). The operator's token is KENO_OPS_TOKEN, the viewer's
// KENO_OPS_VIEWER_TOKEN.
const (
	roleViewer   = "viewer"
	roleOperator = "operator"
)

// tokenRole is the role a token gives ("" for none).
func (a *App) tokenRole(tok string) string {
	switch {
	case a.validOpsToken(tok):
		return roleOperator
	case a.Cfg.ViewerToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(a.Cfg.ViewerToken)) == 1:
		return roleViewer
	}
	return ""
}

// role is who the request is: by bearer token, or by the console's cookie.
func (a *App) role(r *http.Request) string {
	if tok, ok := bearer(r); ok {
		return a.tokenRole(tok)
	}
	c, err := r.Cookie(opsCookie)
	if err != nil {
		return ""
	}
	parts := strings.SplitN(c.Value, ".", 3) // exp.role.mac
	if len(parts) != 3 {
		return ""
	}
	exp, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || time.Now().Unix() >= exp || !hmac.Equal([]byte(c.Value), []byte(a.opsSession(exp, parts[1]))) {
		return ""
	}
	// A cookie rides along on any request to this origin: an action by
	// cookie must also carry the console's header, which another site's
	// form cannot send (SameSite=Strict already keeps them out).
	if r.Method != http.MethodGet && r.Header.Get("X-Keno-Console") != "1" {
		return ""
	}
	return parts[1]
}

// console admits the bearer token or the console's cookie, for a role at
// least as strong as want; every admitted call names its role in the log.
func (a *App) console(want string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		role := a.role(r)
		switch {
		case role == "":
			unauthorized(w, "log in with an ops token first")
		case want == roleOperator && role != roleOperator:
			fail(w, http.StatusForbidden, "forbidden", "this needs the operator role")
		default:
			h(w, r.WithContext(withRole(r.Context(), role)))
		}
	}
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

// opsLogin trades a bearer token for a session cookie carrying its role
// (POST /api/ops/login), and says which role.
func (a *App) opsLogin(w http.ResponseWriter, r *http.Request) {
	tok, _ := bearer(r)
	role := a.tokenRole(tok)
	if role == "" {
		unauthorized(w, "wrong ops token")
		return
	}
	exp := time.Now().Add(opsSessionLife).Unix()
	http.SetCookie(w, &http.Cookie{Name: opsCookie, Value: a.opsSession(exp, role), Path: "/", MaxAge: int(opsSessionLife.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: a.Cfg.Mode == "production"})
	reqLog(r).Info().Str("audit", "ops_login").Str("role", role).Str("remote", r.RemoteAddr).Msg("console login")
	writeJSON(w, http.StatusOK, map[string]string{"role": role})
}

func (a *App) opsSession(exp int64, role string) string {
	s := strconv.FormatInt(exp, 10) + "." + role
	m := hmac.New(sha256.New, []byte(a.Cfg.OpsToken))
	m.Write([]byte("ops-session." + s))
	return s + "." + hex.EncodeToString(m.Sum(nil))
}

// opsPage admits any console role (the live feed, the session check).
func (a *App) opsPage(h http.HandlerFunc) http.HandlerFunc { return a.console(roleViewer, h) }

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
