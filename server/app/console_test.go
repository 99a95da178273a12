package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"keno/protocol"
	"keno/server/auth"
)

func opsDo(t *testing.T, ts *testServer, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.admin+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ts.app.Cfg.OpsToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// Maintenance, cluster-wide: on a second server too, new tickets are
// refused with a typed maintenance error and the operator's message, the
// game in play finishes; lifted, play resumes. A broadcast reaches every
// player of every server.
func TestMaintenanceAndBroadcast(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) {
		c.Session.ColorInterval, c.Session.NumberInterval = 30*time.Millisecond, 60*time.Millisecond
	})
	other := startServer(t, ts.redis)
	playing := ts.player("mid-game", 5_000)
	waiting := other.player("elsewhere", 5_000)
	confirm(t, playing, grid(100, 1, 2, 3, 4, 5))
	if code, body := opsDo(t, ts, "POST", "/api/ops/maintenance", `{"message":"Maintenance until 14:00."}`); code != 200 {
		t.Fatalf("maintenance on: %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for other.app.Hub.Maintenance() == "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	_, err := waiting.Request(ctxT(t), &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(100, 7, 8, 9)}})
	if errCode(err) != "maintenance" || !strings.Contains(err.Error(), "Maintenance until 14:00.") {
		t.Fatalf("a ticket during maintenance: %v", err)
	}
	log, err := playing.Follow(ctxT(t), protocol.Strategy{})
	if err != nil || log.Done == nil {
		t.Fatalf("the game in play did not finish: %v", err)
	}
	if code, _ := opsDo(t, ts, "DELETE", "/api/ops/maintenance", ""); code != 200 {
		t.Fatal("maintenance off")
	}
	deadline = time.Now().Add(5 * time.Second)
	for other.app.Hub.Maintenance() != "" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := waiting.Request(ctxT(t), &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(100, 7, 8, 9)}}); err != nil {
		t.Fatalf("a ticket after maintenance: %v", err)
	}
	if code, _ := opsDo(t, ts, "POST", "/api/ops/broadcast", `{"message":"Bonne soirée à tous"}`); code != 204 {
		t.Fatal("broadcast")
	}
	for _, c := range []*protocol.Client{playing, waiting} {
		m, err := c.NextOf(ctxT(t), protocol.TNotice)
		if err != nil || m.Text != "Bonne soirée à tous" {
			t.Errorf("broadcast: %+v %v", m, err)
		}
	}
}

// The operator's actions on a player: lookup, kick, block (no login) and
// unblock, lowering a limit (never raising one), excluding.
func TestOperatorPlayerActions(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.player("watched", 5_000)
	if _, err := c.Play(ctxT(t), []protocol.Grid{grid(100, 1, 2, 3)}, protocol.Strategy{}); err != nil {
		t.Fatal(err)
	}
	code, body := opsDo(t, ts, "GET", "/api/ops/players/watched", "")
	var v PlayerView
	if code != 200 || json.Unmarshal([]byte(body), &v) != nil || v.Journal != "intact" || len(v.Last) != 1 || !v.Online {
		t.Fatalf("lookup: %d %s", code, body)
	}
	if code, _ := opsDo(t, ts, "GET", "/api/ops/players/nobody", ""); code != 404 {
		t.Errorf("lookup of nobody: %d", code)
	}
	if code, _ := opsDo(t, ts, "POST", "/api/ops/players/watched/kick", ""); code != 204 {
		t.Fatal("kick")
	}
	if m, err := c.NextOf(ctxT(t), protocol.TError); err != nil || m.Error == nil || m.Error.Code != "kicked" {
		t.Fatalf("the kicked player was told %+v (%v)", m, err)
	}
	if code, _ := opsDo(t, ts, "POST", "/api/ops/players/watched/block", `{"reason":"fraud check"}`); code != 204 {
		t.Fatal("block")
	}
	if _, err := protocol.Connect(ctxT(t), ts.url, ts.app.Signer.Issue("watched", time.Now().Add(time.Hour))); errCode(err) != "account_blocked" {
		t.Fatalf("a blocked player's hello: %v", err)
	}
	opsDo(t, ts, "POST", "/api/ops/players/watched/unblock", "")
	c = ts.connect("watched")
	if code, body := opsDo(t, ts, "POST", "/api/ops/players/watched/limit", `{"kind":"loss_limit","value":2000}`); code != 204 {
		t.Fatalf("lower the loss limit: %d %s", code, body)
	}
	if code, body := opsDo(t, ts, "POST", "/api/ops/players/watched/limit", `{"kind":"loss_limit","value":9000}`); code != 422 || !strings.Contains(body, "not_a_lowering") {
		t.Errorf("raise a limit: %d %s", code, body)
	}
	if code, _ := opsDo(t, ts, "POST", "/api/ops/players/watched/exclude", `{"days":7}`); code != 204 {
		t.Fatal("exclude")
	}
	entries, _ := ts.app.Store.Journal(context.Background(), "watched")
	var sealedActions int
	for _, e := range entries {
		if strings.Contains(e.Data, `"kind":"limit"`) && strings.Contains(e.Data, `"by":"operator"`) {
			sealedActions++
		}
	}
	if sealedActions != 2 { // the loss limit and the exclusion; the refused raise left nothing
		t.Errorf("%d operator limit changes sealed in the journal, want 2", sealedActions)
	}
	if _, damaged, err := ts.app.Store.Verify(context.Background()); err != nil || len(damaged) != 0 {
		t.Errorf("verify after the actions: %+v %v", damaged, err)
	}
	_, lim, _ := ts.app.Store.Standing(context.Background(), "watched")
	if lim.LossLimit != 2000 || lim.ExcludedUntil < time.Now().Add(6*24*time.Hour).UnixMilli() {
		t.Errorf("limits after the actions: %+v", lim)
	}
}

// Tokens are JWTs: a retired key, another algorithm, an expired token or a
// revoked session is refused with unauthorized and says which; revoking a
// session ends its connection at once.
func TestPlayerTokens(t *testing.T) {
	cur, old := auth.Key{ID: "dec", Secret: []byte("the december key, long enough")}, auth.Key{ID: "nov", Secret: []byte("the november key, long enough")}
	ts := startServer(t, nil, func(c *Config) { c.TokenKeys = []auth.Key{cur} })
	before, _ := auth.NewKeyring([]auth.Key{old})
	hello := func(tok string) error {
		c, err := protocol.Connect(ctxT(t), ts.url, tok)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := hello(before.Issue("tina", time.Now().Add(time.Hour))); errCode(err) != "unauthorized" || !strings.Contains(err.Error(), "retired or unknown") {
		t.Errorf("a retired key: %v", err)
	}
	if err := hello(ts.app.Signer.Issue("tina", time.Now().Add(-time.Minute))); errCode(err) != "unauthorized" || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired token: %v", err)
	}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "tina", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err := hello(none); errCode(err) != "unauthorized" || !strings.Contains(err.Error(), "algorithm") {
		t.Errorf("alg none: %v", err)
	}
	tok, _ := ts.app.Signer.IssueClaims(auth.Claims{Player: "tina", Session: "s-42", Lang: "fr", Currency: "EUR"}, time.Now().Add(time.Hour))
	c, err := protocol.Connect(ctxT(t), ts.url, tok)
	if err != nil {
		t.Fatalf("a good token: %v", err)
	}
	if code, body := opsDo(t, ts, "POST", "/api/ops/sessions/s-42/revoke", ""); code != 204 {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if m, err := c.NextOf(ctxT(t), protocol.TError); err != nil || m.Error.Code != "kicked" {
		t.Errorf("the revoked session was told %+v %v", m, err)
	}
	if err := hello(tok); errCode(err) != "unauthorized" || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a revoked session's token: %v", err)
	}
}
