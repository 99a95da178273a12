package seamless

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"keno/engine"
	"keno/server/operator"
	"keno/server/redistest"
	"keno/server/wallet"
)

var opKey = []byte("test-operator-key-0123456789abcdef")

type fixture struct {
	t     *testing.T
	store *wallet.Store
	ref   *operator.Reference
	bank  *Bank
	fence string
}

const fund = 500 // 5 €

// newFixture: a real redis-server, the reference operator over HTTP, and a
// bank whose debits may be rolled back by others after inFlight.
func newFixture(t *testing.T, player string, inFlight time.Duration) *fixture {
	rs := redistest.Start(t)
	cfg := wallet.DefaultConfig()
	cfg.BetRate = wallet.Rate{}
	store, err := wallet.New(rs.Client(), []byte("test-seal-key-0123456789abcdef"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ref := operator.NewReference(opKey, fund, operator.Faults{Hang: 400 * time.Millisecond})
	srv := httptest.NewServer(ref)
	t.Cleanup(srv.Close)
	client := operator.NewClient(srv.URL, opKey, "EUR", 150*time.Millisecond)
	f := &fixture{t: t, store: store, ref: ref, bank: New(store, client, inFlight, zerolog.Nop())}
	if f.fence, err = store.Claim(context.Background(), player, time.Minute); err != nil {
		t.Fatal(err)
	}
	return f
}

// ticket deals a ticket of n games at stake from the player's current
// provably fair inputs, as a session does.
func (f *fixture) ticket(player, id string, n int, stake int64) wallet.Ticket {
	in, err := f.store.Fair(context.Background(), player)
	if err != nil {
		f.t.Fatal(err)
	}
	tk := wallet.Ticket{ID: id, Seed: in.Seed}
	src := engine.NewSecureSource()
	for i := 0; i < n; i++ {
		q, _ := engine.QuickPick(src, 5)
		picks, _ := engine.ValidatePicks(q)
		nonce := in.Next + uint64(i)
		o, err := engine.Default().Deal(engine.NewFairSource(in.Seed, in.Client, nonce), picks, stake)
		if err != nil {
			f.t.Fatal(err)
		}
		tk.Games = append(tk.Games, wallet.GameRecord{ID: fmt.Sprintf("%s-%d", id, i), Ticket: id, Index: i, Grids: n, Player: player,
			Created: time.Now().UnixMilli(), Fair: wallet.Fairness{Commit: in.Public().Commit, ClientSeed: in.Client, Nonce: nonce}, Outcome: o})
	}
	return tk
}

func (f *fixture) book(player string) operator.Book {
	for _, b := range f.ref.Books() {
		if b.Player == player {
			if !b.Holds() {
				f.t.Fatalf("the operator's book does not hold: %+v", b)
			}
			return b
		}
	}
	f.t.Fatalf("no book for %s", player)
	return operator.Book{}
}

func (f *fixture) owed(player string) []wallet.Call {
	calls, err := f.store.Outbox().Pending(context.Background(), player)
	if err != nil {
		f.t.Fatal(err)
	}
	return calls
}

// settleOwed settles g with the default choices while the operator's
// credits fail: the settlement stands and its credit stays owed.
func (f *fixture) settleOwed(player string, g *wallet.GameRecord) engine.Result {
	f.t.Helper()
	res, _ := engine.Default().Settle(&g.Outcome, engine.Choices{})
	if st, err := f.bank.Settle(context.Background(), player, f.fence, g, nil, res); err != nil || !st.Pending {
		f.t.Fatalf("settle with the credit failing: %+v %v", st, err)
	}
	return res
}

// drain sends what is owed until nothing is (backoff included).
func (f *fixture) drain(player string) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := f.bank.Owed(context.Background(), player, false)
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("still owed after 20 s: %+v (%v)", f.owed(player), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestSeamlessTicketDebitedAndCreditedOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "ann", time.Minute)
	tk := f.ticket("ann", "t1", 2, 100)
	bal, dup, err := f.bank.PlaceBet(ctx, "ann", f.fence, tk)
	if err != nil || dup || bal != fund-200 {
		t.Fatalf("bet: balance %d dup %v err %v; want %d", bal, dup, err, fund-200)
	}
	// A retry of the same ticket (its answer lost) debits nothing more and
	// leaves nothing in flight.
	if bal, dup, err = f.bank.PlaceBet(ctx, "ann", f.fence, tk); err != nil || !dup || bal != fund-200 {
		t.Fatalf("retried bet: balance %d dup %v err %v", bal, dup, err)
	}
	var wins int64
	for i := range tk.Games {
		g := &tk.Games[i]
		res, err := engine.Default().Settle(&g.Outcome, engine.Choices{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.bank.Settle(ctx, "ann", f.fence, g, nil, res)
		if err != nil || st.Pending {
			t.Fatalf("settle: %+v %v", st, err)
		}
		wins += res.Win
		if st.Balance != fund-200+wins {
			t.Fatalf("balance after game %d: %d, want the operator's %d", i, st.Balance, fund-200+wins)
		}
		if again, err := f.bank.Settle(ctx, "ann", f.fence, g, nil, res); err != nil || !again.Dup {
			t.Fatalf("settled twice: %+v %v", again, err)
		}
	}
	b := f.book("ann")
	if len(b.Rounds) != 1 || b.Rounds["d-t1"] != 200 || len(b.Credits) != 2 || b.Credited != wins || b.Rollbacks != 0 {
		t.Fatalf("operator's book: %+v", b)
	}
	if len(f.owed("ann")) != 0 {
		t.Fatalf("owed: %+v", f.owed("ann"))
	}
	r, err := f.store.Reconcile(ctx)
	if err != nil || !r.Clean || r.Bets != 1 || r.Credited != 2 {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	// Redis's record of the games agrees with the operator: the house's
	// take is what was debited and not credited.
	a, _ := f.store.Account(ctx, "ann")
	if !a.Seamless || a.House != b.Debited-b.Credited || a.OperatorBalance != b.Balance {
		t.Fatalf("account %+v against the operator's %+v", a, b)
	}
}

func TestSeamlessLostDebitIsRolledBack(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "bob", time.Minute)
	var spent []wallet.Ticket
	for i, fault := range []operator.Faults{{Lost: 1}, {Timeouts: 1}, {Errors: 1}} {
		fault.Calls = []string{operator.PathDebit}
		f.ref.SetFaults(fault)
		tk := f.ticket("bob", fmt.Sprint("t", i), 1, 100)
		_, _, err := f.bank.PlaceBet(ctx, "bob", f.fence, tk)
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, wallet.ErrSpent) {
			t.Fatalf("%+v: %v, want wallet_unavailable and the ticket spent", fault, err)
		}
		spent = append(spent, tk)
	}
	f.ref.SetFaults(operator.Faults{})
	f.drain("bob")
	time.Sleep(500 * time.Millisecond) // a hung debit finishes at the operator after its rollback: refused there
	b := f.book("bob")
	if b.Balance != fund || len(b.Rounds) != 0 {
		t.Fatalf("an unanswered debit was not undone: %+v", b)
	}
	// A spent ticket cannot be played: its transaction was rolled back.
	for _, tk := range spent {
		if _, _, err := f.bank.PlaceBet(ctx, "bob", f.fence, tk); !errors.Is(err, wallet.ErrSpent) {
			t.Fatalf("ticket %s placed again after its rollback: %v", tk.ID, err)
		}
	}
	if open, _ := f.store.OpenGames(ctx, "bob"); len(open) != 0 || f.book("bob").Balance != fund {
		t.Fatalf("a rolled-back ticket was played: %d games, %+v", len(open), f.book("bob"))
	}
}

func TestSeamlessDebitLeftInFlightByADeadServer(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "cy", 300*time.Millisecond)
	tk := f.ticket("cy", "t1", 1, 200)
	// A server wrote the intent and sent the debit, then died before the bet.
	if err := f.store.Outbox().Intend(ctx, "cy", tk.ID, 200, time.Now().Add(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	client := operator.NewClient(httptestURL(t, f.ref), opKey, "EUR", time.Second)
	if _, err := client.Debit(ctx, operator.DebitCall{Player: "cy", Tx: wallet.DebitTx("t1"), Round: "t1", Amount: 200}); err != nil {
		t.Fatal(err)
	}
	if n, err := f.bank.Owed(ctx, "cy", false); err != nil || n != 1 {
		t.Fatalf("before its time the debit stays in flight: owed %d %v", n, err)
	}
	if f.book("cy").Balance != fund-200 {
		t.Fatal("the debit did not land")
	}
	f.drain("cy")
	if b := f.book("cy"); b.Balance != fund || b.Rollbacks != 1 {
		t.Fatalf("not rolled back: %+v", b)
	}
	// The dead server's bet, had it come late, is refused: never both.
	if _, _, err := f.bank.PlaceBet(ctx, "cy", f.fence, tk); !errors.Is(err, wallet.ErrSpent) {
		t.Fatalf("a bet after its debit's rollback: %v", err)
	}
	if open, _ := f.store.OpenGames(ctx, "cy"); len(open) != 0 {
		t.Fatalf("a rolled-back ticket was played: %d games", len(open))
	}
	if r, err := f.store.Reconcile(ctx); err != nil || !r.Clean {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
}

func TestSeamlessCreditSentUntilAcknowledged(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "dee", time.Minute)
	tk := f.ticket("dee", "t1", 1, 200)
	if _, _, err := f.bank.PlaceBet(ctx, "dee", f.fence, tk); err != nil {
		t.Fatal(err)
	}
	f.ref.SetFaults(operator.Faults{Lost: 0.5, Errors: 0.5, Calls: []string{operator.PathCredit}})
	res := f.settleOwed("dee", &tk.Games[0])
	if r, _ := f.store.Reconcile(ctx); r.Clean || len(r.Owed) != 1 || len(r.Problems) != 0 {
		t.Fatalf("reconcile with a credit owed: %+v", r)
	}
	f.ref.SetFaults(operator.Faults{})
	f.drain("dee")
	b := f.book("dee")
	if len(b.Credits) != 1 || b.Credits["c-t1-0"] != res.Win || b.Balance != fund-200+res.Win {
		t.Fatalf("credited %+v, want %d once", b, res.Win)
	}
	if r, err := f.store.Reconcile(ctx); err != nil || !r.Clean || r.Credited != 1 {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
}

// The operator answers a retried credit with its first answer, whose
// balance is older than the next ticket's debit: the balance shown — the
// last known, when the operator's balance cannot be read — is still the
// operator's once nothing is owed, because a read of it is owed after
// every retried call.
func TestSeamlessRetriedCallDoesNotShowAnOldBalance(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "fay", time.Minute)
	t1 := f.ticket("fay", "t1", 1, 100)
	if _, _, err := f.bank.PlaceBet(ctx, "fay", f.fence, t1); err != nil {
		t.Fatal(err)
	}
	f.ref.SetFaults(operator.Faults{Lost: 1, Calls: []string{operator.PathCredit}}) // done, unanswered
	f.settleOwed("fay", &t1.Games[0])
	f.ref.SetFaults(operator.Faults{})
	if _, _, err := f.bank.PlaceBet(ctx, "fay", f.fence, f.ticket("fay", "t2", 1, 100)); err != nil {
		t.Fatal(err)
	}
	// The credit's retry is answered with the balance before t2's debit;
	// the read that follows fails, and stays owed.
	f.ref.SetFaults(operator.Faults{Errors: 1, Calls: []string{operator.PathBalance}})
	time.Sleep(1100 * time.Millisecond) // the credit's backoff
	if n, err := f.bank.Owed(ctx, "fay", false); err != nil || n != 1 {
		t.Fatalf("after the credit's retry: owed %d %v, want the balance read", n, err)
	}
	if o := f.owed("fay"); len(o) != 1 || o[0].Kind != wallet.KindBalance {
		t.Fatalf("owed %+v, want one read of the balance", o)
	}
	a, _ := f.store.Account(ctx, "fay")
	if b := f.book("fay"); a.OperatorBalance != b.Balance {
		t.Fatalf("last known balance %d, the operator holds %d", a.OperatorBalance, b.Balance)
	}
	f.ref.SetFaults(operator.Faults{})
	f.drain("fay")
	if r, err := f.store.Reconcile(ctx); err != nil || !r.Clean || r.Credited != 1 {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
}

func TestSeamlessOperatorRefusals(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "eve", time.Minute)
	_, _, err := f.bank.PlaceBet(ctx, "eve", f.fence, f.ticket("eve", "big", 5, 200)) // 10 € > 5 €
	var we *wallet.Error
	if !errors.As(err, &we) || we.Code != "insufficient_funds" || we.Available != fund {
		t.Fatalf("a debit past the operator's balance: %v", err)
	}
	f.ref.Block("eve", true)
	if _, _, err := f.bank.PlaceBet(ctx, "eve", f.fence, f.ticket("eve", "blocked", 1, 100)); !errors.As(err, &we) || we.Code != "player_blocked" {
		t.Fatalf("a blocked player's debit: %v", err)
	}
	if owed := f.owed("eve"); len(owed) != 0 {
		t.Fatalf("a refused debit left calls owed: %+v", owed)
	}
	if b := f.book("eve"); b.Balance != fund || b.Rollbacks != 0 {
		t.Fatalf("%+v", b)
	}
}

func httptestURL(t *testing.T, ref *operator.Reference) string {
	srv := httptest.NewServer(ref)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A ticket's debit intent written while its summary is shown (Prepare):
// the confirmation sends the debit without writing it again; a ticket
// given up is forgotten without a call; one whose server died is rolled
// back by the sweep, and can then never be played.
func TestSeamlessPreparedIntent(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "fay", 300*time.Millisecond)
	until := time.Now().Add(time.Minute)
	tk := f.ticket("fay", "t1", 1, 200)
	if err := f.bank.Prepare(ctx, "fay", tk.ID, tk.GameIDs(), 200, until); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.store.Recovery().Count(ctx); n != 1 {
		t.Fatalf("prepared: %d recovery entries, want the game's, before the debit", n)
	}
	if c := f.owed("fay"); len(c) != 1 || c[0].Kind != wallet.KindDebit || c[0].Due < until.Add(300*time.Millisecond).UnixMilli() {
		t.Fatalf("prepared intent: %+v, want one debit in flight past %v", c, until)
	}
	if n, err := f.bank.Owed(ctx, "fay", false); err != nil || n != 1 {
		t.Fatalf("a sweep before its time leaves the intent: owed %d %v", n, err)
	}
	tk.Intended = until
	if _, _, err := f.bank.PlaceBet(ctx, "fay", f.fence, tk); err != nil {
		t.Fatal(err)
	}
	if c := f.owed("fay"); len(c) != 0 {
		t.Fatalf("after the bet: %+v owed", c)
	}
	if b := f.book("fay"); b.Debited != 200 || b.Balance != fund-200 {
		t.Fatalf("debited %+v, want 2 € once", b)
	}

	// Given up: forgotten, nothing sent.
	if err := f.bank.Prepare(ctx, "fay", "t2", []string{"t2-0"}, 100, until); err != nil {
		t.Fatal(err)
	}
	if err := f.bank.Forget(ctx, "fay", "t2", []string{"t2-0"}); err != nil {
		t.Fatal(err)
	}
	if c := f.owed("fay"); len(c) != 0 {
		t.Fatalf("forgotten intent still owed: %+v", c)
	}
	if n, _ := f.store.Recovery().Count(ctx); n != 1 {
		t.Fatalf("forgotten: %d recovery entries, want t1's alone", n)
	}

	// Past its time, it is left to the session while one plays the player
	// (its summary may still be on screen); once none does (its server
	// died on the summary), it is rolled back.
	t3 := f.ticket("fay", "t3", 1, 100)
	if err := f.bank.Prepare(ctx, "fay", t3.ID, t3.GameIDs(), 100, time.Now()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(350 * time.Millisecond)
	if n, err := f.bank.Owed(ctx, "fay", true); err != nil || n != 1 {
		t.Fatalf("a live player's intent past its time: owed %d %v, want left in flight", n, err)
	}
	f.drain("fay")
	if _, _, err := f.bank.PlaceBet(ctx, "fay", f.fence, t3); !errors.Is(err, wallet.ErrSpent) {
		t.Fatalf("a ticket whose prepared debit was rolled back: %v", err)
	}
	if b := f.book("fay"); b.Debited != 200 || b.Balance != fund-200 || b.Rollbacks != 0 {
		t.Fatalf("after the rollback of a debit never sent: %+v", b)
	}
	if r, err := f.store.Reconcile(ctx); err != nil || !r.Clean {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
}
