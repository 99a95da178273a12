package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// opsCall sends an ops API request; auth is the whole Authorization header.
func opsCall(t *testing.T, ts *testServer, method, path, auth, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.admin+path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil && resp.StatusCode != http.StatusNoContent {
		t.Fatalf("%s %s: %d, body is not JSON: %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, resp.Header, out
}

// The operator's cashier and books API: the bearer token in the header
// only, idempotency as Stripe defines it, typed JSON errors.
func TestOpsAPI(t *testing.T) {
	ts := startServer(t, nil)
	tok := ts.app.Cfg.OpsToken
	auth := "Bearer " + tok
	call := func(method, path, body string) (int, http.Header, map[string]any) {
		return opsCall(t, ts, method, path, auth, body)
	}
	for _, a := range []string{"", "Bearer wrong", tok, "Basic " + tok} {
		if code, _, out := opsCall(t, ts, "POST", "/api/ops/deposit", a, `{"player":"ann","amount":500,"op":"1"}`); code != 401 || out["code"] != "unauthorized" {
			t.Fatalf("deposit with Authorization %q: %d %v", a, code, out)
		}
	}
	if code, _, _ := opsCall(t, ts, "POST", "/api/ops/deposit?token="+tok, "", `{"player":"ann","amount":500,"op":"1"}`); code != 401 {
		t.Fatalf("token in the URL accepted: %d", code)
	}
	code, hdr, out := call("POST", "/api/ops/deposit", `{"player":"ann","amount":500,"op":"1"}`)
	if code != 200 || out["balance"].(float64) != 500 || out["replay"] != false || hdr.Get("Idempotent-Replayed") != "" {
		t.Fatalf("deposit: %d %v", code, out)
	}
	code, hdr, out = call("POST", "/api/ops/deposit", `{"player":"ann","amount":500,"op":"1"}`)
	if code != 200 || out["balance"].(float64) != 500 || out["replay"] != true || hdr.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replayed deposit: %d %v", code, out)
	}
	// The same op for anything else is a conflict; nothing moves.
	for _, body := range []string{
		`{"player":"ann","amount":700,"op":"1"}`,
		`{"player":"bob","amount":500,"op":"1"}`,
	} {
		if code, _, out := call("POST", "/api/ops/deposit", body); code != 409 || out["code"] != "op_conflict" || out["message"] == "" {
			t.Fatalf("%s: %d %v", body, code, out)
		}
	}
	if code, _, out := call("POST", "/api/ops/withdraw", `{"player":"ann","amount":500,"op":"1"}`); code != 409 || out["code"] != "op_conflict" {
		t.Fatalf("a withdrawal with a deposit's op: %d %v", code, out)
	}
	// Without op, nothing is credited — the first time or any other.
	for range 2 {
		if code, _, out := call("POST", "/api/ops/deposit", `{"player":"ann","amount":700}`); code != 400 || out["code"] != "missing_op" {
			t.Fatalf("deposit without op: %d %v", code, out)
		}
	}
	for body, want := range map[string]string{
		`{"player":"ann","amount":500,"op":"c","currency":"USD"}`:            "bad_request",
		`{"player":"ann","amount":5.5,"op":"c"}`:                             "bad_request",
		`{"player":"ann","amount":"500","op":"c"}`:                           "bad_request",
		`{"player":"ann","amount":500,"op":"c"}]`:                            "bad_request",
		`{"player":"ann","amount":100000001,"op":"c"}`:                       "bad_amount",
		`{"player":"ann","amount":9223372036854775807,"op":"c"}`:             "bad_amount",
		`{"player":"ann","amount":0,"op":"c"}`:                               "bad_amount",
		`{"player":"a}b","amount":5,"op":"c"}`:                               "bad_request",
		`{"player":"ann","amount":5,"op":"` + strings.Repeat("o", 65) + `"}`: "missing_op",
	} {
		if code, _, out := call("POST", "/api/ops/deposit", body); code != 400 || out["code"] != want || out["message"] == "" {
			t.Errorf("%s: %d %v, want 400 %s", body, code, out, want)
		}
	}
	if code, _, out := call("POST", "/api/ops/withdraw", `{"player":"ann","amount":900,"op":"w1"}`); code != 422 || out["code"] != "insufficient_funds" || out["available"].(float64) != 500 {
		t.Fatalf("overdraw: %d %v", code, out)
	}
	if code, _, out := call("POST", "/api/ops/withdraw", `{"player":"ann","amount":200,"op":"w2"}`); code != 200 || out["balance"].(float64) != 300 {
		t.Fatalf("withdraw: %d %v", code, out)
	}
	if ts.balance("ann") != 300 || ts.balance("bob") != 0 {
		t.Fatalf("balances %d %d, want 300 0", ts.balance("ann"), ts.balance("bob"))
	}
	if code, _, out := call("GET", "/api/ops/books", ""); code != 200 || out["balanced"] != true {
		t.Fatalf("books: %d %v", code, out)
	}

	// Twenty concurrent deposits to one player are all credited.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, _, out := call("POST", "/api/ops/deposit", fmt.Sprintf(`{"player":"cal","amount":100,"op":"cal-%d"}`, i)); code != 200 {
				t.Errorf("concurrent deposit %d: %d %v", i, code, out)
			}
		}()
	}
	wg.Wait()
	if ts.balance("cal") != 2000 {
		t.Fatalf("20 concurrent deposits of 1 € credited %d cents", ts.balance("cal"))
	}
	ts.checkBooks()
}

// The ops page's feed takes a session cookie obtained with the bearer
// token, never the token in its URL.
func TestOpsSessionCookie(t *testing.T) {
	ts := startServer(t, nil)
	get := func(path string, c *http.Cookie) int {
		req, _ := http.NewRequest("GET", ts.admin+path, nil)
		if c != nil {
			req.AddCookie(c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/ops/feed?token="+ts.app.Cfg.OpsToken, nil); code != 401 {
		t.Fatalf("feed with ?token=: %d", code)
	}
	req, _ := http.NewRequest("POST", ts.admin+"/api/ops/login", nil)
	req.Header.Set("Authorization", "Bearer "+ts.app.Cfg.OpsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "keno_ops" {
			cookie = c
		}
	}
	if resp.StatusCode != 200 || cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login: %d %+v", resp.StatusCode, cookie)
	}
	if code := get("/ops/feed", cookie); code != 200 {
		t.Fatalf("feed with the session cookie: %d", code)
	}
	forged := *cookie
	forged.Value = "99999999999" + cookie.Value[strings.IndexByte(cookie.Value, '.'):]
	if code := get("/ops/feed", &forged); code != 401 {
		t.Fatalf("feed with a forged cookie: %d", code)
	}
	// The cookie is the page's only: the cashier wants the bearer token.
	req, _ = http.NewRequest("POST", ts.admin+"/api/ops/deposit", strings.NewReader(`{"player":"ann","amount":5,"op":"k"}`))
	req.AddCookie(cookie)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Fatalf("cashier with the cookie: %v %v", resp, err)
	}
	// An action by cookie needs the console's header (no cross-site form).
	act := func(c *http.Cookie, header bool) int {
		req, _ := http.NewRequest("POST", ts.admin+"/api/ops/players/ann/kick", nil)
		req.AddCookie(c)
		if header {
			req.Header.Set("X-Keno-Console", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := act(cookie, false); code != 401 {
		t.Errorf("an action by cookie without the console's header: %d", code)
	}
	if code := act(cookie, true); code != 204 {
		t.Errorf("the operator's kick: %d", code)
	}
	// The viewer reads, and may not act.
	req, _ = http.NewRequest("POST", ts.admin+"/api/ops/login", nil)
	req.Header.Set("Authorization", "Bearer "+ts.app.Cfg.ViewerToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("viewer login: %v %v", resp, err)
	}
	var viewer *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "keno_ops" {
			viewer = c
		}
	}
	resp.Body.Close()
	if code := get("/ops/feed", viewer); code != 200 {
		t.Errorf("the viewer's feed: %d", code)
	}
	if code := act(viewer, true); code != 403 {
		t.Errorf("the viewer's kick: %d", code)
	}
	// A viewer cookie edited to say operator is refused.
	forged = *viewer
	forged.Value = strings.Replace(viewer.Value, ".viewer.", ".operator.", 1)
	if code := act(&forged, true); code != 401 {
		t.Errorf("a viewer cookie turned operator: %d", code)
	}
}

// The live-ops figures are cluster-wide: two servers on one Redis each
// see every player online, and their own on /metrics.
func TestOpsFiguresAreClusterWide(t *testing.T) {
	a := startServer(t, nil, func(c *Config) { c.ServerID = "a" })
	b := startServer(t, a.redis, func(c *Config) { c.ServerID = "b" })
	a.player("ops1", 0)
	a.player("ops2", 0)
	b.player("ops3", 0)
	deadline := time.Now().Add(10 * time.Second)
	for {
		sa, sb := a.app.Ops.Last(), b.app.Ops.Last()
		if sa.Servers == 2 && sa.OnlineCluster == 3 && sb.OnlineCluster == 3 && sa.Online == 2 && sb.Online == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster-wide figures: a %+v / b %+v", sa, sb)
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := http.Get(b.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "keno_sessions_connected 1\n") {
		t.Error("server b's own /metrics should count its one player")
	}
	// The Redis pool as the client sees it: b has talked to Redis.
	m := regexp.MustCompile(`keno_redis_pool_connections\{state="open"\} (\d+)`).FindStringSubmatch(string(body))
	if m == nil || m[1] == "0" {
		t.Errorf("server b's /metrics should show its open Redis connections, got %v", m)
	}
	// The group commit's counts: scripts sent, and the pipelines they left in.
	for _, name := range []string{"keno_redis_scripts_total", "keno_redis_script_batches_total"} {
		if !regexp.MustCompile(`(?m)^` + name + ` \d+$`).Match(body) {
			t.Errorf("server b's /metrics should export %s", name)
		}
	}
}

// Every request gets an id (a sane one from the proxy is kept), echoed in
// the answer; the admin listener logs each request with it.
func TestRequestIDsAndAccessLog(t *testing.T) {
	var logs safeBuffer
	ts := startServer(t, nil, func(c *Config) { c.LogOutput, c.LogLevel = &logs, "info" })
	r, _ := http.NewRequest("GET", ts.base+"/healthz", nil)
	r.Header.Set("X-Request-Id", "lb-7f3a")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("X-Request-Id"); got != "lb-7f3a" {
		t.Errorf("the proxy's request id came back as %q", got)
	}
	r, _ = http.NewRequest("GET", ts.admin+"/api/ops/books", nil)
	r.Header.Set("Authorization", "Bearer "+ts.app.Cfg.OpsToken)
	r.Header.Set("X-Request-Id", "bad id with spaces")
	res, err = http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Header.Get("X-Request-Id")
	if len(id) != 16 {
		t.Fatalf("a new request id was not made: %q", id)
	}
	line := logs.String()
	if !strings.Contains(line, `"request_id":"`+id+`"`) || !strings.Contains(line, `"path":"/api/ops/books"`) || !strings.Contains(line, `"status":200`) {
		t.Errorf("no access log line for the admin request: %s", line)
	}
	if !regexp.MustCompile(`"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}`).MatchString(line) {
		t.Errorf("timestamps are not in milliseconds: %s", line)
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *safeBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// The console's GGR window adds each server's progress, whatever restarts.
func TestGGRWindow(t *testing.T) {
	var g ggrWindow
	g.add("a", 5_000, 4_000) // totals from before: not this window's
	g.add("b", 0, 0)
	g.add("a", 6_000, 4_600) // +1 000 −600
	g.add("b", 300, 100)     // +300 −100
	g.add("a", 200, 50)      // a restarted: +200 −50
	if h, d := g.sums(time.Now()); h != 400+200+150 || d != h {
		t.Fatalf("GGR hour %d, day %d", h, d)
	}
	if h, _ := g.sums(time.Now().Add(2 * time.Hour)); h != 0 {
		t.Errorf("GGR of an hour two hours on: %d", h)
	}
}
