package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"keno/server/operator"
	"keno/server/wallet"
)

// The seamless-wallet mode (-wallet seamless): the spawned servers keep the
// money in a reference operator wallet (keno-server operator) that
// misbehaves as -operator-faults says; after the run, once nothing is owed
// to it, every player's books there are held against the sealed journal.

// operatorKey signs the calls between the spawned servers and the spawned
// reference wallet (loopback only).
const operatorKey = "loadtest-operator-key-0123456789abcdef"

// operatorFund is what each player's account at the operator opens with.
const operatorFund = 50_000

type operatorSetup struct {
	cmd *exec.Cmd
	url string
}

// faultFlags turns "errors=0.05,timeouts=0.05,lost=0.02" into the
// reference wallet's flags.
func faultFlags(spec string) ([]string, error) {
	var out []string
	for _, kv := range strings.Split(spec, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		x, err := strconv.ParseFloat(v, 64)
		switch k {
		case "errors", "timeouts", "lost", "duplicates", "slow":
		default:
			ok = false
		}
		if !ok || err != nil || x < 0 || x > 1 {
			return nil, fmt.Errorf("-operator-faults: %q is not kind=share (errors, timeouts, lost, duplicates, slow; 0..1)", kv)
		}
		out = append(out, "-"+k, v)
	}
	return out, nil
}

// startOperator spawns the reference wallet (the server binary's operator
// subcommand) on a free loopback port.
func startOperator(serverBin, faults string, latency time.Duration) (*operatorSetup, error) {
	flags, err := faultFlags(faults)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort())
	cmd := exec.Command(serverBin, append([]string{"operator", "-addr", addr, "-fund", fmt.Sprint(operatorFund),
		"-latency", latency.String(), "-hang", "1500ms"}, flags...)...)
	// One core's worth of threads: it stands for an operator's remote
	// service, and on a shared host its goroutine hand-offs between idle
	// cores would be charged to the game's own latency.
	cmd.Env = append(os.Environ(), "OPERATOR_KEY="+operatorKey, "GOMAXPROCS=1")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if err := waitTCP(addr); err != nil {
		cmd.Process.Kill()
		return nil, err
	}
	return &operatorSetup{cmd: cmd, url: "http://" + addr}, nil
}

func (o *operatorSetup) stop() {
	o.cmd.Process.Kill()
	o.cmd.Wait()
}

// serverArgs point the spawned servers at the wallet. A short grace lets a
// killed server's debits in flight be rolled back within the run's end.
func (o *operatorSetup) serverArgs() []string {
	return []string{"-wallet", "seamless", "-operator-url", o.url, "-operator-key", operatorKey, "-operator-timeout", "1s", "-grace", "10s"}
}

// SeamlessCheck is the end-of-run comparison of the operator's books with
// the game's sealed journal.
type SeamlessCheck struct {
	Faults        map[string]int `json:"faults_injected"`
	DrainSeconds  float64        `json:"owed_drained_after_s"`
	OwedLeft      int            `json:"owed_left"`
	Players       int            `json:"players"`
	Debited       int64          `json:"debited"`
	Credited      int64          `json:"credited"`
	Rollbacks     int            `json:"rollbacks"`
	BooksBroken   []string       `json:"operator_books_broken"` // balance ≠ deposits − debits + credits
	Disagreements []string       `json:"disagreements"`         // operator vs journal, per player
	Reconcile     string         `json:"reconcile"`             // keno-server reconcile's last line
	Clean         bool           `json:"reconcile_clean"`
}

// check waits until nothing is owed to the operator (the sweep sends it),
// then holds each player's book at the operator against the journal.
func (o *operatorSetup) check(c *config, serverBin, redisAddr string) *SeamlessCheck {
	sc := &SeamlessCheck{}
	t0 := time.Now()
	for {
		sc.OwedLeft = owedCalls(c)
		if sc.OwedLeft == 0 || time.Since(t0) > 3*time.Minute {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	sc.DrainSeconds = time.Since(t0).Seconds()
	out, err := exec.Command(serverBin, "reconcile", "-json", "-redis", "redis://"+redisAddr).Output()
	var r wallet.Reconciliation
	if err2 := json.Unmarshal(out, &r); err2 != nil {
		sc.Reconcile = fmt.Sprintf("reconcile failed: %v %v", err, err2)
		return sc
	}
	sc.Clean = r.Clean
	sc.Reconcile = fmt.Sprintf("%d players, %d bets, %d settlements (%d credited), %d owed, %d mismatches",
		r.Players, r.Bets, r.Settlements, r.Credited, len(r.Owed), len(r.Problems))
	for _, p := range r.Problems[:min(len(r.Problems), 10)] {
		sc.Disagreements = append(sc.Disagreements, "reconcile: "+p)
	}
	b, err := operator.FetchBooks(context.Background(), o.url, []byte(operatorKey))
	if err != nil {
		sc.Disagreements = append(sc.Disagreements, "operator books: "+err.Error())
		return sc
	}
	sc.Faults = b.Faults
	seen := map[string]bool{}
	for _, bk := range b.Books {
		sc.Players++
		sc.Debited += bk.Debited
		sc.Credited += bk.Credited
		sc.Rollbacks += bk.Rollbacks
		seen[bk.Player] = true
		if !bk.Holds() {
			sc.BooksBroken = append(sc.BooksBroken, fmt.Sprintf("%s: %+v", bk.Player, bk))
		}
		j := r.Accounts[bk.Player]
		if !bk.Agrees(j.Staked, j.Bets, j.Won, j.Settlements) {
			sc.Disagreements = append(sc.Disagreements, fmt.Sprintf("%s: operator debited %d in %d rounds and credited %d in %d credits; the journal has %d staked in %d bets and %d won in %d settlements",
				bk.Player, bk.Debited, len(bk.Rounds), bk.Credited, len(bk.Credits), j.Staked, j.Bets, j.Won, j.Settlements))
		}
	}
	for p, j := range r.Accounts {
		if !seen[p] && j.Bets > 0 {
			sc.Disagreements = append(sc.Disagreements, fmt.Sprintf("%s: %d bets in the journal, no account at the operator", p, j.Bets))
		}
	}
	return sc
}

// owedCalls asks a server how many calls are still owed to the operator
// (-1 when no server answers).
func owedCalls(c *config) int {
	for _, admin := range c.admins {
		req, _ := http.NewRequest(http.MethodGet, admin+"/api/ops/operator", nil)
		req.Header.Set("Authorization", "Bearer "+c.opsToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		var v struct{ Owed int }
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			return v.Owed
		}
	}
	return -1
}
