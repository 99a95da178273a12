package app

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
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
