package app

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"keno/protocol"
	"keno/server/redistest"
)

// deadPeer opens a game socket, says hello with token, and from then on
// neither reads nor answers anything: a client whose network vanished
// without a FIN. The returned conn only serves to see the server close it.
func deadPeer(t *testing.T, ts *testServer, token string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", strings.TrimPrefix(ts.base, "http://"))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	payload := []byte(`{"type":"hello","id":"1","token":"` + token + `"}`)
	frame := []byte{0x81, 0x80 | 126, 0, 0, 1, 2, 3, 4} // FIN+text, masked, 16-bit length, mask key
	binary.BigEndian.PutUint16(frame[2:4], uint16(len(payload)))
	for i, b := range payload {
		frame = append(frame, b^frame[4+i%4])
	}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedWithin reports whether the server closes c within d (whatever it
// sent before is drained).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	return err == nil // io.Copy treats EOF as success; a deadline is an error
}

func (ts *testServer) token(player string) string {
	return ts.app.Signer.Issue(player, time.Now().Add(time.Hour))
}

// Two connections of one player opened at the same instant: exactly one,
// the newer, survives; the other is told it was taken over.
func TestSimultaneousConnectionsOneSurvives(t *testing.T) {
	ts := startServer(t, nil)
	for trial := range 20 {
		player := fmt.Sprint("twin", trial)
		var wg sync.WaitGroup
		clients := make([]*protocol.Client, 2)
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := protocol.Connect(ctxT(t), ts.url, ts.token(player))
				if err == nil {
					clients[i] = c
					t.Cleanup(func() { c.Close() })
				}
			}()
		}
		wg.Wait()
		// The older one is closed — before its welcome (Connect fails), or
		// after it, however late the takeover notice comes…
		if clients[0] != nil && clients[1] != nil {
			select {
			case <-clients[0].Done():
			case <-clients[1].Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("trial %d: both connections survived", trial)
			}
		}
		// …and the other one stays and answers.
		alive := 0
		for _, c := range clients {
			if c == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TPing}); err == nil {
				alive++
			}
			cancel()
		}
		if alive != 1 {
			t.Fatalf("trial %d: %d of the two connections survived, want exactly 1", trial, alive)
		}
	}
}

// A takeover does not wait for the old peer's close handshake: a player
// whose old socket is dead but not closed gets its welcome at once.
func TestTakeoverDoesNotWaitForADeadPeer(t *testing.T) {
	ts := startServer(t, nil)
	deadPeer(t, ts, ts.token("ghost"))
	time.Sleep(200 * time.Millisecond) // the dead session is registered
	t0 := time.Now()
	c := ts.connect("ghost")
	if waited := time.Since(t0); waited > 2*time.Second { // it waited 5 s for the dead peer before
		t.Fatalf("welcome after %v", waited)
	}
	if _, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TPing}); err != nil {
		t.Fatal(err)
	}
}

// Silent dead peers are dropped together, not one close handshake after
// another; idle HTTP keep-alive connections are closed too.
func TestDeadPeersAreReapedTogether(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) { c.Session.IdleTimeout = time.Second; c.HTTPIdle = time.Second })
	var peers []net.Conn
	for i := range 8 {
		peers = append(peers, deadPeer(t, ts, ts.token(fmt.Sprint("dead", i))))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for _, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !closedWithin(p, 10*time.Second) { // one by one, 8 × 5 s handshakes before
				mu.Lock()
				open++
				mu.Unlock()
			}
		}()
	}
	keepAlive, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer keepAlive.Close()
	fmt.Fprintf(keepAlive, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(keepAlive), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	if !closedWithin(keepAlive, 10*time.Second) {
		t.Error("an idle keep-alive connection was not closed")
	}
	wg.Wait()
	if open > 0 {
		t.Fatalf("%d of 8 dead peers still connected after 10 s", open)
	}
}

// With Redis down long enough for the leases to lapse, idle players are
// not told that they connected elsewhere: the sessions claim their lease
// again when Redis is back and carry on.
func TestRedisOutageIsNotATakeover(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) { c.Session.LeaseTTL = time.Second })
	var clients []*protocol.Client
	for i := range 5 {
		c := ts.player(fmt.Sprint("idle", i), 1_000)
		c.Heartbeat(500 * time.Millisecond)
		clients = append(clients, c)
	}
	ts.redis.Kill()
	time.Sleep(2500 * time.Millisecond) // past the lease
	ts.redis.Restart()
	time.Sleep(2 * time.Second) // the lease keeper's rounds
	for i, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.Request(ctx, &protocol.Request{Type: protocol.TBalance})
		cancel()
		if err != nil {
			t.Fatalf("player %d lost after the outage: %v", i, err)
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			m, err := c.Next(ctx)
			cancel()
			if err != nil {
				break
			}
			if m.Type == protocol.TTakenOver {
				t.Fatalf("player %d told session_taken_over after a Redis outage", i)
			}
		}
	}
	// And they can still play: the reclaimed lease fences their bets.
	if _, err := clients[0].Play(ctxT(t), []protocol.Grid{grid(100, 1, 2, 3)}, protocol.Strategy{}); err != nil {
		t.Fatalf("play after the outage: %v", err)
	}
	ts.checkBooks()
}

// A text frame that is not UTF-8 fails the connection with 1007.
func TestInvalidUTF8Closes1007(t *testing.T) {
	ts := startServer(t, nil)
	conn, _, err := websocket.Dial(ctxT(t), ts.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.Write(ctxT(t), websocket.MessageText, []byte("{\"type\":\"ping\",\"id\":\"\xff\"}"))
	_, _, err = conn.Read(ctxT(t))
	if websocket.CloseStatus(err) != websocket.StatusInvalidFramePayloadData {
		t.Fatalf("closed with %v, want 1007", err)
	}
}

// A client too fast is refused with the id of the request refused.
func TestRateLimitedRepliesCarryTheID(t *testing.T) {
	ts := startServer(t, nil)
	c := ts.player("quick", 0)
	for i := range 60 {
		c.SendRaw(ctxT(t), []byte(fmt.Sprintf(`{"type":"balance","id":"r%d"}`, i)))
	}
	for {
		m, err := c.Next(ctxT(t))
		if err != nil {
			t.Fatal("no rate_limited refusal")
		}
		if m.Type == protocol.TError && m.Error.Code == protocol.CodeRateLimited {
			if !strings.HasPrefix(m.ID, "r") {
				t.Fatalf("rate_limited without the request's id: %+v", m)
			}
			return
		}
	}
}

// Pages and answers say they may not be framed or sniffed, with a CSP;
// sockets from other sites' pages are refused.
func TestWebSecurity(t *testing.T) {
	ts := startServer(t, nil)
	for _, url := range []string{ts.base + "/", ts.base + "/healthz", ts.admin + "/ops.html"} {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", url, h)
		}
	}
	// The admin surfaces are off the public listener, and on the admin one.
	for _, path := range []string{"/ops.html", "/ops.js", "/metrics", "/api/ops/books", "/ops/feed", "/debug/pprof/"} {
		resp, err := http.Get(ts.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("public %s: %d", path, resp.StatusCode)
		}
	}
	for path, want := range map[string]int{"/ops.html": 200, "/metrics": 200, "/debug/pprof/": 200, "/api/ops/books": 401} {
		resp, err := http.Get(ts.admin + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("admin %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	dial := func(origin string) int {
		_, resp, err := websocket.Dial(ctxT(t), ts.url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
		if resp == nil {
			t.Fatalf("dial from %s: %v", origin, err)
		}
		return resp.StatusCode
	}
	if code := dial("https://evil.example"); code != http.StatusForbidden {
		t.Errorf("socket from another site: %d", code)
	}
	if code := dial(ts.base); code != http.StatusSwitchingProtocols {
		t.Errorf("socket from the game's own page: %d", code)
	}
	allowed := startServer(t, nil, func(c *Config) { c.Session.OriginPatterns = []string{"casino.example"} })
	if _, resp, err := websocket.Dial(ctxT(t), allowed.url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://casino.example"}}}); err != nil || resp.StatusCode != 101 {
		t.Errorf("socket from an allowed origin: %v", err)
	}
}

// Behind a trusted load balancer each client has its own per-IP budget;
// from anyone else, X-Forwarded-For is not believed.
func TestTrustedProxies(t *testing.T) {
	burst := func(ts *testServer) (accepted int) {
		for i := range 100 {
			c, resp, err := websocket.Dial(ctxT(t), ts.url, &websocket.DialOptions{
				HTTPHeader: http.Header{"X-Forwarded-For": {fmt.Sprintf("198.51.100.%d", i)}}})
			if err == nil {
				accepted++
				c.CloseNow()
			} else if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("dial: %v", err)
			}
		}
		return accepted
	}
	trusting := func(c *Config) {
		c.TrustedProxies, _ = parseCIDRs("127.0.0.0/8")
		c.Session.ClientIP.Trusted = c.TrustedProxies
	}
	if n := burst(startServer(t, nil, trusting)); n != 100 {
		t.Errorf("through a trusted proxy: %d of 100 distinct clients accepted", n)
	}
	if n := burst(startServer(t, nil)); n >= 100 {
		t.Errorf("an untrusted peer's X-Forwarded-For was believed: %d of 100 accepted", n)
	}
}

// The durability contract is checked at start: production refuses a Redis
// that can lose acknowledged writes (appendfsync everysec without replicas
// or WAITAOF) and names the setting; dev mode runs and tells every client.
func TestDurabilityContractAtStart(t *testing.T) {
	loose := redistest.Start(t, "--appendfsync", "everysec")
	strong := func(c string) string { return strings.Repeat(c, 32) }
	cfg, err := ParseConfig([]string{"-mode", "production", "-redis", loose.URL(), "-log", "json", "-log-level", "error",
		"-token-key", strong("t"), "-seal-key", strong("s"), "-ops-token", strong("o"), "-archive", "postgres://keno@127.0.0.1:1/none"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "appendfsync everysec") {
		t.Fatalf("production on appendfsync everysec: %v", err)
	}
	dev := startServer(t, loose)
	if c := dev.connect("careless"); !c.Welcome.Config.NotDurable {
		t.Fatal("a dev server on a non-durable Redis did not tell its client")
	}
	if c := startServer(t, nil).connect("careful"); c.Welcome.Config.NotDurable { // appendfsync always
		t.Fatal("not_durable on a durable Redis")
	}
}

// A shutdown fails readiness at once, refuses new tickets with a typed
// server_draining, and ends within DRAIN_TIMEOUT however many peers are
// dead: they are closed in parallel, then dropped.
func TestShutdownIsBoundedWhateverPeersDo(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) { c.DrainDelay, c.DrainTimeout = 500*time.Millisecond, 2*time.Second })
	for i := range 6 {
		deadPeer(t, ts, ts.token(fmt.Sprint("stuck", i)))
	}
	c := ts.player("leaving", 1_000)
	time.Sleep(200 * time.Millisecond) // the dead peers are registered
	t0 := time.Now()
	go ts.stop()
	time.Sleep(100 * time.Millisecond) // inside DRAIN_DELAY: still listening
	resp, err := http.Get(ts.base + "/readyz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz while draining: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(100, 1, 2, 3)}}); errCode(err) != protocol.CodeDraining {
		t.Fatalf("a ticket while draining: %v", err)
	}
	<-ts.done
	if took := time.Since(t0); took > 4*time.Second { // 6 × 5 s close handshakes, one after another, before
		t.Fatalf("shutdown took %v with DRAIN_TIMEOUT 2s", took)
	}
}

// /readyz answers within 1.5 s when Redis hangs (every Redis call has a
// deadline that go-redis honours).
func TestReadyWhenRedisHangs(t *testing.T) {
	ts := startServer(t, nil)
	ts.redis.Pause()
	defer ts.redis.Resume()
	t0 := time.Now()
	resp, err := http.Get(ts.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || time.Since(t0) > 1500*time.Millisecond {
		t.Fatalf("readyz with Redis hung: %d after %v", resp.StatusCode, time.Since(t0))
	}
}
