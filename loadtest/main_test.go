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
	cfg, err := app.ParseConfig([]string{"-mode", "dev", "-profile", "fast", "-log", "json", "-log-level", "error", "-redis", rs.URL(), "-conn-rate-ip", "0"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx, l); close(done) }()
	defer func() { stop(); <-done }()

	// Correctness only: under the race detector, timings mean nothing.
	c := &config{wsURL: "ws://" + l.Addr().String() + "/ws", opsToken: cfg.OpsToken, players: 20, idle: 10,
		duration: 2 * time.Second, ramp: 500 * time.Millisecond, think: 200 * time.Millisecond, strategy: "random",
		disconnect: 0.2, flooders: 0.05, vandals: 0.05, maxGrids: 3, procs: 1, prefix: "t", report: t.TempDir()}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if err := run(c); err != nil {
		out, _ := os.ReadFile(filepath.Join(c.report, "report.txt"))
		t.Fatalf("%v\n%s", err, out)
	}
	txt, _ := os.ReadFile(filepath.Join(c.report, "report.txt"))
	html, _ := os.ReadFile(filepath.Join(c.report, "report.html"))
	if !strings.Contains(string(txt), "[PASS] books") || !strings.Contains(string(html), "<svg") {
		t.Fatalf("report incomplete:\n%s", txt)
	}
	if !strings.Contains(string(txt), "reconnects") || strings.Contains(string(txt), "reconnects 0 ") {
		t.Errorf("no player dropped and reconnected:\n%s", txt)
	}
}

func TestRefusesNonLoopbackTargets(t *testing.T) {
	for _, u := range []string{"ws://10.0.0.1:8080/ws", "ws://example.com/ws", "ws://192.168.1.2/ws", "http://127.0.0.1/ws"} {
		c := &config{wsURL: u, players: 1, duration: time.Second, strategy: "stop", maxGrids: 1}
		if err := c.validate(); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	c := &config{wsURL: "ws://127.0.0.1:1/ws", players: maxPlayers + 1, duration: time.Second, strategy: "stop", maxGrids: 1}
	if c.validate() == nil {
		t.Error("player cap not enforced")
	}
}
