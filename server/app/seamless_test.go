package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"keno/engine"
	"keno/protocol"
	"keno/server/auth"
	"keno/server/operator"
)

var testOperatorKey = []byte("test-operator-key-0123456789abcdef")

// withOperator moves the money to the operator's wallet at url.
func withOperator(url string, timeout time.Duration) option {
	return func(c *Config) {
		c.Operator = OperatorConfig{Wallet: "seamless", URL: url, Key: string(testOperatorKey), Currency: "EUR", Timeout: timeout}
	}
}

// played is what the players were told was accepted and settled.
type played struct {
	mu      sync.Mutex
	tickets map[string]int64 // ticket → total, accepted
	wins    map[string]int64 // game → win, settled
	refused int              // confirms refused wallet_unavailable
}

// playThrough plays n tickets over the wire, building a ticket again
// whenever the operator's wallet failed its debit.
func (p *played) playThrough(t *testing.T, c *protocol.Client, n int) {
	ctx := ctxT(t)
	for done := 0; done < n; {
		grids := []protocol.Grid{{QuickPick: 3 + rand.IntN(6), Stake: 50}}
		if rand.IntN(2) == 0 {
			grids = append(grids, protocol.Grid{QuickPick: 5, Stake: 100})
		}
		sum, err := c.Request(ctx, &protocol.Request{Type: protocol.TTicket, Grids: grids})
		if err != nil {
			t.Error("ticket:", err)
			return
		}
		acc, err := c.Request(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket})
		if code := errCode(err); code == protocol.CodeWalletUnavailable {
			p.mu.Lock()
			p.refused++
			p.mu.Unlock()
			continue
		} else if err != nil {
			t.Error("confirm:", err)
			return
		}
		log, err := c.Follow(ctx, protocol.Strategy{Continue: func(*engine.Main) bool { return rand.IntN(2) == 0 }})
		if err != nil {
			t.Error("play:", err)
			return
		}
		p.mu.Lock()
		p.tickets[acc.Ticket] = sum.Total
		for _, g := range log.Games {
			p.wins[g.Game] = g.Settled.Win
		}
		p.mu.Unlock()
		done++
	}
}

// A seamless wallet that fails a tenth of its calls (errors, timeouts,
// lost answers) and delivers some twice: every accepted ticket is debited
// once and never rolled back, every refused ticket's debit is rolled back,
// every settled game is credited once with its win; the operator's books,
// Redis's record and the reconciliation agree; the balance shown is the
// operator's.
func TestSeamlessWalletUnderFaults(t *testing.T) {
	ref := operator.NewReference(testOperatorKey, 20_000, operator.Faults{Errors: 0.05, Timeouts: 0.04, Lost: 0.02,
		Duplicates: 0.05, Slow: 0.05, SlowBy: 30 * time.Millisecond, Hang: 400 * time.Millisecond})
	op := httptest.NewServer(ref)
	defer op.Close()
	seamlessScenario(t, op.URL, func() ([]operator.Book, int) {
		f := ref.Faulted()
		return ref.Books(), f["error"] + f["timeout"] + f["lost"]
	})
}

// The same against an operator written from protocol/OPERATOR.md alone,
// in another language (testdata/operator.mjs): the contract is what is
// tested, not our own reading of it.
func TestSeamlessIndependentOperator(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not found: run `make deps`")
	}
	cmd := exec.Command(node, "testdata/operator.mjs")
	cmd.Env = append(os.Environ(), "OPERATOR_KEY="+string(testOperatorKey), "FUND=20000", "FAULTS=errors=0.05,timeouts=0.04,lost=0.02")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var port int
	if _, err := fmt.Fscanf(bufio.NewReader(out), "listening %d\n", &port); err != nil {
		t.Fatal("the node operator did not start:", err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	seamlessScenario(t, base, func() ([]operator.Book, int) {
		var v struct {
			Books  []operator.Book `json:"books"`
			Faults int             `json:"faults"`
		}
		res, err := http.Get(base + "/books")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v.Books, v.Faults
	})
}

// seamlessScenario plays four players' tickets against a faulty operator
// wallet at opURL and checks everyone's books; books reads the operator's
// books and how many faults it injected.
func seamlessScenario(t *testing.T, opURL string, books func() ([]operator.Book, int)) {
	ts := startServer(t, nil, withOperator(opURL, 200*time.Millisecond), withGrace(time.Second))
	p := &played{tickets: map[string]int64{}, wins: map[string]int64{}}
	var wg sync.WaitGroup
	for _, name := range []string{"sw-ann", "sw-bob", "sw-cy", "sw-dee"} {
		c := ts.connect(name)
		wg.Add(1)
		go func() { defer wg.Done(); p.playThrough(t, c, 6) }()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Whatever the faults left owed is sent by the sweep, with backoff.
	var owed owedReport
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := opsDo(t, ts, http.MethodGet, "/api/ops/operator", "")
		if code != http.StatusOK || json.Unmarshal([]byte(body), &owed) != nil {
			t.Fatalf("owed report: %d %s", code, body)
		}
		if owed.Owed == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls still owed after 60 s: %s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(1200 * time.Millisecond) // a hung call lands at the operator after its retry: it must change nothing

	bks, faults := books()
	t.Logf("%d tickets accepted, %d refused wallet_unavailable; %d faults injected", len(p.tickets), p.refused, faults)
	if faults == 0 {
		t.Fatal("no fault was injected: the test proves nothing")
	}
	debited, credited := map[string]int64{}, map[string]int64{}
	ctx := context.Background()
	for _, b := range bks {
		if !b.Holds() {
			t.Errorf("%s: the operator's books do not hold: %+v", b.Player, b)
		}
		for tx, v := range b.Rounds {
			debited[tx] = v
		}
		for tx, v := range b.Credits {
			credited[tx] = v
		}
		a, err := ts.app.Store.Account(ctx, b.Player)
		if err != nil {
			t.Fatal(err)
		}
		if a.House != b.Debited-b.Credited {
			t.Errorf("%s: Redis's house take %d, the operator's debits − credits %d", b.Player, a.House, b.Debited-b.Credited)
		}
		// The balance a player is shown is the operator's.
		c := ts.connect(b.Player)
		m, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TBalance})
		if err != nil || *m.Balance != b.Balance {
			t.Errorf("%s: shown %v (%v), the operator holds %d", b.Player, m, err, b.Balance)
		}
	}
	if len(debited) != len(p.tickets) {
		t.Errorf("%d debits stand at the operator for %d accepted tickets", len(debited), len(p.tickets))
	}
	for ticket, total := range p.tickets {
		if debited["d-"+ticket] != total {
			t.Errorf("ticket %s: debited %d, its total is %d", ticket, debited["d-"+ticket], total)
		}
	}
	if len(credited) != len(p.wins) {
		t.Errorf("%d credits for %d settled games", len(credited), len(p.wins))
	}
	for game, win := range p.wins {
		if v, ok := credited["c-"+game]; !ok || v != win {
			t.Errorf("game %s: credited %d (%v), won %d", game, v, ok, win)
		}
	}
	r, err := ts.app.Store.Reconcile(ctx)
	if err != nil || !r.Clean || r.Bets != len(p.tickets) || r.Credited != len(p.wins) {
		t.Errorf("reconcile: %+v %v", r, err)
	}
	for _, b := range bks {
		if j := r.Accounts[b.Player]; j.Staked != b.Debited || j.Won != b.Credited {
			t.Errorf("%s: the journal says %d staked and %d won, the operator %d debited and %d credited", b.Player, j.Staked, j.Won, b.Debited, b.Credited)
		}
	}
	if _, damaged, err := ts.app.Store.Verify(ctx); err != nil || len(damaged) > 0 {
		t.Errorf("verify: %+v %v", damaged, err)
	}
	ts.checkBooks()

	// The console shows the operator wallet's calls and failures.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if s := ts.app.Ops.Last(); s.Seamless && s.OperatorCallsPerS > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the console shows no operator wallet calls: %+v", ts.app.Ops.Last())
			break
		}
	}

	// A token for an account in another currency is refused.
	usd, err := ts.app.Signer.IssueClaims(auth.Claims{Player: "sw-usd", Currency: "USD"}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := protocol.Connect(ctxT(t), ts.url, usd); errCode(err) != protocol.CodeUnauthorized || !strings.Contains(err.Error(), "USD") {
		t.Errorf("a USD token against a EUR wallet: %v", err)
	}

	// The game's cashier does not move money that lives at the operator.
	code, body := opsDo(t, ts, http.MethodPost, "/api/ops/deposit", `{"player":"sw-ann","amount":100,"op":"x"}`)
	if code != http.StatusConflict {
		t.Errorf("a deposit in seamless mode: %d %s", code, body)
	}
	c := ts.connect("sw-ann")
	if _, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TDeposit, Amount: 100, Op: "x"}); errCode(err) != protocol.CodeForbidden {
		t.Errorf("a player's deposit in seamless mode: %v", err)
	}
}

// Seamless mode in Chromium: the page shows the operator's balance; a
// ticket whose debit the operator's wallet fails is refused in the
// player's words, nothing is debited, and the page goes back to the
// builder with the picks kept; once the wallet answers, the same picks
// make a ticket that is played, and the balance shown is the operator's.
func TestBrowserSeamlessWallet(t *testing.T) {
	ref := operator.NewReference(testOperatorKey, 1_000, operator.Faults{Errors: 1, Calls: []string{operator.PathDebit}})
	op := httptest.NewServer(ref)
	defer op.Close()
	ts := startServer(t, nil, withOperator(op.URL, 300*time.Millisecond), func(c *Config) {
		c.Session.ColorInterval, c.Session.NumberInterval = 150*time.Millisecond, 150*time.Millisecond
	})
	ctx := openPage(t, 768, 1024)
	answerOffers(t, ctx)
	signIn(t, ctx, ts, "wanda")
	do(t, ctx, "the operator's balance is shown", until(`document.getElementById("balance").dataset.cents === "1000"`))
	do(t, ctx, "a ticket whose debit the wallet fails", append(pick(5, 10, 15), click("#btn-review"),
		chromedp.WaitVisible(chromedp.CSS("#summary")), click("#btn-confirm"),
		until(`document.getElementById("message").textContent.includes("portefeuille de votre opérateur")`),
		chromedp.WaitVisible(chromedp.CSS("#builder")))...)
	if b := ref.Books(); len(b) != 1 || b[0].Balance != 1_000 || len(b[0].Rounds) != 0 {
		t.Fatalf("a failed debit left the operator's book at %+v", b)
	}
	ref.SetFaults(operator.Faults{})
	do(t, ctx, "the same picks again", click("#btn-review"), chromedp.WaitVisible(chromedp.CSS("#summary")), click("#btn-confirm"),
		until(`document.getElementById("balance").dataset.cents === "900"`))
	if b := ref.Books()[0]; b.Debited != 100 || len(b.Rounds) != 1 {
		t.Fatalf("the operator's book after one ticket: %+v", b)
	}
}
