package app

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The operator's cashier and books API: token required, idempotent moves,
// typed refusals.
func TestOpsAPI(t *testing.T) {
	ts := startServer(t, nil)
	call := func(method, path, token, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, ts.base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	tok := ts.app.Cfg.OpsToken
	if code, _ := call("POST", "/api/ops/deposit", "", `{"player":"ann","amount":500,"op":"1"}`); code != 401 {
		t.Fatalf("deposit without token: %d", code)
	}
	if code, _ := call("POST", "/api/ops/deposit", "wrong", `{"player":"ann","amount":500,"op":"1"}`); code != 401 {
		t.Fatalf("deposit with a wrong token: %d", code)
	}
	for i := 0; i < 2; i++ { // the same op twice moves money once
		if code, out := call("POST", "/api/ops/deposit", tok, `{"player":"ann","amount":500,"op":"1"}`); code != 200 || out["balance"].(float64) != 500 {
			t.Fatalf("deposit: %d %v", code, out)
		}
	}
	if code, out := call("POST", "/api/ops/withdraw", tok, `{"player":"ann","amount":900,"op":"w1"}`); code != 409 || out["error"] != "insufficient_funds" || out["available"].(float64) != 500 {
		t.Fatalf("overdraw: %d %v", code, out)
	}
	if code, out := call("POST", "/api/ops/withdraw", tok, `{"player":"ann","amount":200,"op":"w2"}`); code != 200 || out["balance"].(float64) != 300 {
		t.Fatalf("withdraw: %d %v", code, out)
	}
	if code, out := call("GET", "/api/ops/books", tok, ""); code != 200 || out["balanced"] != true {
		t.Fatalf("books: %d %v", code, out)
	}
	if code, _ := call("POST", "/api/ops/deposit", tok, `{"player":"a}b","amount":5,"op":"x"}`); code != 400 {
		t.Fatalf("bad player id: %d", code)
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
	resp, err := http.Get(b.base + "/metrics")
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
}
