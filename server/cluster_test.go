package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"keno/protocol"
	"keno/server/auth"
	"keno/server/redistest"
	"keno/server/wallet"
)

func loadtestBinary(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "keno-loadtest")
	if out, err := exec.Command("go", "build", "-o", bin, "../loadtest").CombinedOutput(); err != nil {
		t.Fatalf("build loadtest: %v\n%s", err, out)
	}
	return bin
}

// Three stateless servers on a real 3-master Redis Cluster (each master
// with a replica). Players spread over the servers and move between them
// mid-game; one server is killed with SIGKILL mid-load and one Redis master
// is killed and failed over. Afterwards the books balance to the cent,
// every game the players saw was settled exactly once, the games abandoned
// on the dead server were settled by the survivors, and the journals verify.
func TestClusterScaleOut(t *testing.T) {
	cluster := redistest.StartCluster(t, 3, 1)
	url := cluster.URL()
	extra := []string{"-replica-acks", "1", "-conn-rate-ip", "0"}
	servers := []*proc{startProc(t, url, extra...), startProc(t, url, extra...), startProc(t, url, extra...)}
	var wsURLs, admins []string
	for _, s := range servers {
		wsURLs = append(wsURLs, "ws://"+s.addr+"/ws")
		admins = append(admins, "http://"+s.admin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Players who confirm a ticket on server 3 and never come back.
	signer, _ := auth.NewSigner([]byte("dev-token-key-not-for-production"))
	abandoned := map[string]string{}
	for i := 0; i < 3; i++ {
		player := fmt.Sprint("gone", i)
		c, err := protocol.Connect(ctx, wsURLs[2], signer.Issue(player, time.Now().Add(time.Hour)))
		if err != nil {
			t.Fatal(err)
		}
		c.Request(ctx, &protocol.Request{Type: protocol.TDeposit, Amount: 1000, Op: "d"})
		sum, err := c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{{QuickPick: 6, Stake: 100}}})
		if err != nil {
			t.Fatal(err)
		}
		acc, err := c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket})
		if err != nil {
			t.Fatal(err)
		}
		abandoned[acc.Games[0].Game] = player
	}

	report := t.TempDir()
	lt := exec.CommandContext(ctx, loadtestBinary(t), "-url", strings.Join(wsURLs, ","), "-admin", strings.Join(admins, ","), "-players", "30",
		"-duration", "10s", "-ramp", "1s", "-think", "200ms", "-disconnect", "0.15", "-flooders", "0", "-vandals", "0",
		"-perf-checks=false", "-report", report, "-prefix", "cl")
	var out strings.Builder
	lt.Stdout, lt.Stderr = &out, &out
	if err := lt.Start(); err != nil {
		t.Fatal(err)
	}

	time.Sleep(3 * time.Second)
	servers[2].kill() // SIGKILL mid-load: its players move to the others
	time.Sleep(2 * time.Second)
	master := cluster.MasterOf("keno:open")
	master.Kill() // a Redis master dies; its replica takes over
	cluster.WaitHealthy(30*time.Second, false)
	master.Restart() // and comes back as a replica
	cluster.WaitHealthy(60*time.Second, true)

	lt.Wait() // its own verdict may count the failover's transient errors; the invariants are checked below
	var rep struct {
		Games        int64          `json:"games"`
		Mismatches   []string       `json:"balance_mismatches"`
		Unsettled    int64          `json:"unsettled_games"`
		DoubleSettle int64          `json:"double_settled_games"`
		Reconnects   int64          `json:"reconnects"`
		Books        map[string]any `json:"books"`
	}
	b, err := os.ReadFile(filepath.Join(report, "report.json"))
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, out.String())
	}
	json.Unmarshal(b, &rep)
	if rep.Games < 100 || len(rep.Mismatches) > 0 || rep.Unsettled > 0 || rep.DoubleSettle > 0 || rep.Reconnects == 0 {
		t.Fatalf("load over the cluster: %+v\n%s", rep, out.String())
	}

	store, _ := wallet.New(cluster.Client(), []byte("dev-seal-key-not-for-production!"), wallet.DefaultConfig())
	deadline := time.Now().Add(30 * time.Second)
	for g, p := range abandoned {
		for {
			st, err := store.Game(ctx, p, g)
			if err == nil && st.Status == "settled" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("game %s abandoned on the dead server was never settled (%v)", g, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	books, err := store.Books(ctx)
	if err != nil || !books.Balanced() || books.Players < 30 {
		t.Fatalf("cluster books: %+v %v", books, err)
	}
	checked, damaged, err := store.Verify(ctx)
	if err != nil || len(damaged) > 0 || checked < 30 {
		t.Fatalf("journals: %d checked, damaged %+v, %v", checked, damaged, err)
	}
	t.Logf("cluster run: %d games, %d reconnects; books %+v\n%s", rep.Games, rep.Reconnects, books, out.String())
}
