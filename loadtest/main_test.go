package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keno/server/app"
	"keno/server/redistest"
)

// A short, bounded run of the real load tester against a real server: the
// players play, drop and reconnect, flood and misbehave, and every check of
// the report holds.
func TestShortLoadRun(t *testing.T) {
	rs := redistest.Start(t)
	url, admin, token := startServer(t, rs)
	// Correctness only: under the race detector, timings mean nothing.
	c := &config{wsURL: url, admin: admin, opsToken: token, players: 20, idle: 10,
		duration: 2 * time.Second, ramp: 500 * time.Millisecond, think: 200 * time.Millisecond, strategy: "random",
		disconnect: 0.2, flooders: 0.05, vandals: 0.05, maxGrids: 3, procs: 1, prefix: "t", report: t.TempDir()}
	txt := mustRun(t, c)
	html, _ := os.ReadFile(filepath.Join(c.report, "report.html"))
	if !strings.Contains(txt, "[PASS] books") || !strings.Contains(string(html), "<svg") {
		t.Fatalf("report incomplete:\n%s", txt)
	}
	if !strings.Contains(txt, "reconnects") || strings.Contains(txt, "reconnects 0 ") {
		t.Errorf("no player dropped and reconnected:\n%s", txt)
	}
}

// The fault mode, short: Redis (appendfsync always, as the durability
// contract wants) is killed -9 and restarted under load; every accepted
// game, settlement and deposit the players were told of is still there.
func TestLoadRunSurvivesRedisKills(t *testing.T) {
	rs := redistest.Start(t)
	url, admin, token := startServer(t, rs)
	c := &config{wsURL: url, admin: admin, opsToken: token, players: 30, duration: 4 * time.Second, ramp: 500 * time.Millisecond,
		think: 100 * time.Millisecond, strategy: "random", disconnect: 0.05, maxGrids: 3, procs: 1, prefix: "k",
		report: t.TempDir(), killRedis: 3, kill: func() error { rs.Restart(); return nil }}
	txt := mustRun(t, c)
	if !strings.Contains(txt, "killed (-9) and restarted 3 times; accepted games lost: 0") || !strings.Contains(txt, "[PASS] acknowledged games kept") {
		t.Fatalf("report:\n%s", txt)
	}
}

// startServer runs a dev-mode, fast-profile server over rs in this process.
func startServer(t *testing.T, rs *redistest.Server) (wsURL, admin, opsToken string) {
	cfg, err := app.ParseConfig([]string{"-mode", "dev", "-profile", "fast", "-log", "json", "-log-level", "error", "-redis", rs.URL(), "-conn-rate-ip", "0"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	al, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx, l, al); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	return "ws://" + l.Addr().String() + "/ws", "http://" + al.Addr().String(), cfg.OpsToken
}

// mustRun runs the load tester without its performance checks and returns
// its report.
func mustRun(t *testing.T, c *config) string {
	t.Helper()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	err := run(c)
	txt, _ := os.ReadFile(filepath.Join(c.report, "report.txt"))
	if err != nil {
		t.Fatalf("%v\n%s", err, txt)
	}
	return string(txt)
}

func TestRefusesNonLoopbackTargets(t *testing.T) {
	if c := (&config{wsURL: "ws://127.0.0.1:1/ws", admin: "http://10.0.0.1:9090", players: 1, duration: time.Second, strategy: "stop", maxGrids: 1}); c.validate() == nil {
		t.Error("a non-loopback admin URL accepted")
	}
	for _, u := range []string{"ws://10.0.0.1:8080/ws", "ws://example.com/ws", "ws://192.168.1.2/ws", "http://127.0.0.1/ws"} {
		c := &config{wsURL: u, admin: "http://127.0.0.1:9090", players: 1, duration: time.Second, strategy: "stop", maxGrids: 1}
		if err := c.validate(); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	c := &config{wsURL: "ws://127.0.0.1:1/ws", admin: "http://127.0.0.1:9090", players: maxPlayers + 1, duration: time.Second, strategy: "stop", maxGrids: 1}
	if c.validate() == nil {
		t.Error("player cap not enforced")
	}
}
