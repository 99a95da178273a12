package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"keno/protocol"
	"keno/server/auth"
	"keno/server/operator"
	"keno/server/redistest"
	"keno/server/wallet"
)

// The seamless wallet across a crash, with the real binaries: the
// reference operator (keno-server operator) fails a tenth of its calls;
// the server playing twelve players' tickets is SIGKILLed mid-reveal; a
// new server settles or resumes the games and sends what the dead one
// owed. Then nothing is owed, `keno-server reconcile` is clean, and each
// player's book at the operator holds the journal's stakes and wins.
func TestSeamlessServerKilled(t *testing.T) {
	const key = "test-operator-key-0123456789abcdef"
	opAddr := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	op := exec.Command(serverBinary(t), "operator", "-addr", opAddr, "-key", key, "-fund", "5000",
		"-errors", "0.04", "-timeouts", "0.03", "-lost", "0.03", "-hang", "700ms")
	stderr, _ := op.StderrPipe()
	if err := op.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { op.Process.Kill(); op.Wait() })
	if line, err := bufio.NewReader(stderr).ReadString('\n'); err != nil || !strings.Contains(line, "reference operator wallet") {
		t.Fatalf("the reference operator did not start: %q %v", line, err)
	}
	seamless := []string{"-wallet", "seamless", "-operator-url", "http://" + opAddr, "-operator-key", key, "-operator-timeout", "300ms"}

	rs := redistest.Start(t)
	a := startProc(t, rs.URL(), seamless...)
	signer, _ := auth.NewSigner([]byte("dev-token-key-not-for-production"))
	token := func(p string) string { return signer.Issue(p, time.Now().Add(time.Hour)) }
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	const players = 12
	for i := 0; i < players; i++ {
		c, err := protocol.Connect(ctx, "ws://"+a.addr+"/ws", token(fmt.Sprint("sk", i)))
		if err != nil {
			t.Fatal(err)
		}
		for accepted := false; !accepted; {
			sum, err := c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{{QuickPick: 5, Stake: 100}, {QuickPick: 7, Stake: 200}}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket})
			if e, ok := err.(*protocol.Error); ok && e.Code == protocol.CodeWalletUnavailable {
				continue // the operator failed the debit: rolled back; build it again
			} else if err != nil {
				t.Fatal(err)
			}
			accepted = true
		}
	}
	a.kill() // mid-reveal: games open, credits not sent, leases left behind

	b := startProc(t, rs.URL(), seamless...)
	for i := 0; i < players/2; i++ {
		c, err := protocol.Connect(ctx, "ws://"+b.addr+"/ws", token(fmt.Sprint("sk", i)))
		if err != nil {
			t.Fatal(err)
		}
		fctx, fcancel := context.WithTimeout(ctx, 5*time.Second)
		c.Follow(fctx, protocol.Strategy{})
		fcancel()
		c.Close()
	}

	// The new server's sweep settles the rest and sends what is owed.
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, "http://"+b.admin+"/api/ops/operator", nil)
		req.Header.Set("Authorization", "Bearer dev-ops-token")
		var owed struct{ Owed int }
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&owed)
			resp.Body.Close()
		}
		out, _ := exec.Command(serverBinary(t), "reconcile", "-json", "-redis", rs.URL()).Output()
		var r wallet.Reconciliation
		json.Unmarshal(out, &r)
		if err == nil && owed.Owed == 0 && r.Clean && r.Settlements == r.Credited && r.Settlements >= 2*players {
			checkOperatorBooks(t, opAddr, key, r)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %d owed; reconcile %s", owed.Owed, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// checkOperatorBooks holds every player's book at the reference operator
// against the journal's sums.
func checkOperatorBooks(t *testing.T, addr, key string, r wallet.Reconciliation) {
	b, err := operator.FetchBooks(context.Background(), "http://"+addr, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("faults injected: %v", b.Faults)
	for _, bk := range b.Books {
		j := r.Accounts[bk.Player]
		if !bk.Holds() || !bk.Agrees(j.Staked, j.Bets, j.Won, j.Settlements) {
			t.Errorf("%s: operator %+v; journal %+v", bk.Player, bk, j)
		}
	}
}
