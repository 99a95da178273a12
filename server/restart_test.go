package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/protocol"
	"keno/server/auth"
	"keno/server/redistest"
	"keno/server/wallet"
)

// buildServer compiles this command once per test run.
var buildOnce sync.Once
var binPath string

func serverBinary(t *testing.T) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "keno-bin")
		if err != nil {
			t.Fatal(err)
		}
		binPath = filepath.Join(dir, "keno-server")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	})
	return binPath
}

type proc struct {
	cmd         *exec.Cmd
	addr, admin string // public and admin listeners
}

// startProc runs the real binary against redisURL.
func startProc(t *testing.T, redisURL string, extra ...string) *proc {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	admin := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	args := append([]string{"serve", "-mode", "dev", "-profile", "fast", "-redis", redisURL,
		"-addr", addr, "-admin-addr", admin, "-grace", "500ms", "-lease", "1s", "-log", "json", "-log-level", "warn"}, extra...)
	cmd := exec.Command(serverBinary(t), args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, addr: addr, admin: admin}
	t.Cleanup(p.kill)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("server did not become ready")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

// The server process is killed with SIGKILL while players' games are in
// flight. A new process on the same Redis settles the abandoned games after
// the grace period and resumes those whose players come back; then the
// books balance to the cent, every game is paid exactly once, and
// `keno-server verify` finds the journals intact.
func TestServerKilledMidGame(t *testing.T) {
	rs := redistest.Start(t)
	a := startProc(t, rs.URL())
	signer, _ := auth.NewSigner([]byte("dev-token-key-not-for-production"))
	token := func(p string) string { return signer.Issue(p, time.Now().Add(time.Hour)) }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const players = 12
	games := map[string]string{} // game → player
	for i := 0; i < players; i++ {
		player := fmt.Sprint("victim", i)
		c, err := protocol.Connect(ctx, "ws://"+a.addr+"/ws", token(player))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Request(ctx, &protocol.Request{Type: protocol.TDeposit, Amount: 2_000, Op: "d"}); err != nil {
			t.Fatal(err)
		}
		sum, err := c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{{QuickPick: 5, Stake: 100}, {QuickPick: 7, Stake: 200}}})
		if err != nil {
			t.Fatal(err)
		}
		acc, err := c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range acc.Games {
			games[g.Game] = player
		}
	}
	a.kill() // mid-reveal for most of them: no cleanup, leases left behind

	b := startProc(t, rs.URL())
	// Half the players come back to the new server and finish their games.
	for i := 0; i < players/2; i++ {
		c, err := protocol.Connect(ctx, "ws://"+b.addr+"/ws", token(fmt.Sprint("victim", i)))
		if err != nil {
			t.Fatal(err)
		}
		// Resumed at once: the reveal replays, then the offers are answered.
		fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
		log, err := c.Follow(fctx, protocol.Strategy{Box: func() int { return 1 }})
		fcancel()
		if err != nil && len(log.Games) > 0 {
			t.Fatalf("resuming on the new server: %v", err)
		}
		c.Close()
	}

	rdb := rs.Client()
	store, _ := wallet.New(rdb, []byte("dev-seal-key-not-for-production!"), wallet.DefaultConfig())
	deadline := time.Now().Add(30 * time.Second)
	for {
		open := 0
		for g, p := range games {
			st, err := store.Game(ctx, p, g)
			if err != nil {
				t.Fatal(err)
			}
			if st.Status != "settled" {
				open++
			}
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d games still open after the crash", open)
		}
		time.Sleep(100 * time.Millisecond)
	}
	credits := map[string]int{}
	for i := 0; i < players; i++ {
		msgs, _ := rdb.XRange(ctx, fmt.Sprintf("{p:victim%d}:journal", i), "-", "+").Result()
		for _, m := range msgs { // the ledger rows ride on the journal entries
			if m.Values["lk"] == "win" {
				credits[m.Values["lr"].(string)]++
			}
		}
	}
	for g := range games {
		if credits[g] != 1 {
			t.Errorf("game %s credited %d times", g, credits[g])
		}
	}

	out, err := exec.Command(serverBinary(t), "verify", "-redis", rs.URL()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0 damaged") || !strings.Contains(string(out), "balanced") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	// Tamper with one sealed entry: verify must say so and fail.
	key := "{p:victim3}:journal"
	msgs, _ := rdb.XRange(ctx, key, "-", "+").Result()
	rdb.Del(ctx, key)
	for i, m := range msgs {
		if i == 1 {
			m.Values["data"] = strings.Replace(m.Values["data"].(string), `"total":300`, `"total":30`, 1)
		}
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: m.ID, Values: m.Values})
	}
	out, err = exec.Command(serverBinary(t), "verify", "-redis", rs.URL()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "victim3") || !strings.Contains(string(out), "altered") {
		t.Fatalf("verify missed the tampering: %v\n%s", err, out)
	}
}
