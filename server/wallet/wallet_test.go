package wallet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/engine"
	"keno/server/journal"
	"keno/server/redistest"
)

var testKey = []byte("test-seal-key-0123456789abcdef")

func newStore(t testing.TB, rdb redis.UniversalClient) *Store {
	cfg := DefaultConfig()
	cfg.BetRate = Rate{} // the tests bet faster than people; TestBetRate sets one
	s, err := New(rdb, testKey, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// eachBackend runs a test against a real redis-server and miniredis.
func eachBackend(t *testing.T, fn func(t *testing.T, s *Store)) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) { fn(t, newStore(t, b.New(t))) })
	}
}

// ticket deals n real games of p quick-picked numbers.
func ticket(t testing.TB, player, id string, n int, stake int64) Ticket {
	src := engine.NewSecureSource()
	tk := Ticket{ID: id}
	for i := 0; i < n; i++ {
		q, _ := engine.QuickPick(src, 6)
		picks, _ := engine.ValidatePicks(q)
		o, err := engine.Default().Deal(src, picks, stake)
		if err != nil {
			t.Fatal(err)
		}
		tk.Games = append(tk.Games, GameRecord{ID: fmt.Sprintf("%s-%d", id, i), Ticket: id, Index: i, Grids: n,
			Player: player, Created: time.Now().UnixMilli(), Outcome: o})
	}
	return tk
}

// placeFair places tk as dealt from the player's current provably fair
// inputs, as a session does (the games here are dealt from another source:
// the wallet checks the inputs named, not the dealing).
func placeFair(ctx context.Context, s *Store, player, fence string, tk Ticket) (int64, bool, error) {
	in, err := s.Fair(ctx, player)
	if err != nil {
		return 0, false, err
	}
	tk.Seed = in.Seed
	tk.Games = slices.Clone(tk.Games)
	for i := range tk.Games {
		tk.Games[i].Fair = Fairness{Commit: in.Public().Commit, ClientSeed: in.Client, Nonce: in.Next + uint64(i)}
	}
	return s.PlaceBet(ctx, player, fence, tk)
}

// placedTicket gives player 50 € and the lease, and places a ticket "t"
// of two games at 1 € each; it returns the lease's fence and the ticket.
func placedTicket(t *testing.T, s *Store, player string) (string, Ticket) {
	t.Helper()
	ctx := context.Background()
	s.Deposit(ctx, player, "d", 5000)
	fence, _ := s.Claim(ctx, player, time.Minute)
	tk := ticket(t, player, "t", 2, 100)
	if _, _, err := placeFair(ctx, s, player, fence, tk); err != nil {
		t.Fatal(err)
	}
	return fence, tk
}

func mustBooks(t testing.TB, s *Store) Books {
	t.Helper()
	b, err := s.Books(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !b.Balanced() {
		t.Fatalf("books do not balance: %+v", b)
	}
	return b
}

func TestDepositWithdrawIdempotent(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		m, err := s.Deposit(ctx, "alice", "dep-1", 5000)
		if err != nil || m != (Moved{Balance: 5000}) {
			t.Fatalf("deposit: %+v %v", m, err)
		}
		// A retry of the same operation moves nothing and answers the same.
		m, err = s.Deposit(ctx, "alice", "dep-1", 5000)
		if err != nil || m != (Moved{Balance: 5000, Replay: true}) {
			t.Fatalf("retried deposit: %+v %v", m, err)
		}
		// The same id for another amount or direction is a conflict.
		if _, err := s.Deposit(ctx, "alice", "dep-1", 700); !errors.Is(err, ErrOpConflict) {
			t.Fatalf("reused op, other amount: %v", err)
		}
		if _, err := s.Withdraw(ctx, "alice", "dep-1", 5000); !errors.Is(err, ErrOpConflict) {
			t.Fatalf("reused op, other direction: %v", err)
		}
		if _, err := s.Withdraw(ctx, "alice", "wd-1", 6000); !errors.Is(err, ErrInsufficientFunds) {
			t.Fatalf("overdraw: %v", err)
		} else if err.(*Error).Available != 5000 {
			t.Errorf("available = %d, want 5000", err.(*Error).Available)
		}
		m, err = s.Withdraw(ctx, "alice", "wd-2", 1500)
		if err != nil || m.Balance != 3500 {
			t.Fatalf("withdraw: %+v %v", m, err)
		}
		if m, _ = s.Withdraw(ctx, "alice", "wd-2", 1500); m != (Moved{Balance: 3500, Replay: true}) {
			t.Fatalf("retried withdraw: %+v", m)
		}
		a, _ := s.Account(ctx, "alice")
		if a != (Account{Balance: 3500, Deposited: 5000, Withdrawn: 1500}) {
			t.Errorf("account %+v", a)
		}
		mustBooks(t, s)
		for _, bad := range []int64{0, -5, MaxAmount + 1, 1<<63 - 1} {
			if _, err := s.Deposit(ctx, "alice", "x", bad); !errors.Is(err, ErrBadAmount) {
				t.Errorf("deposit %d: %v", bad, err)
			}
		}
		if _, err := s.Deposit(ctx, "al}ice", "x", 10); err != ErrBadPlayer {
			t.Errorf("bad player id accepted: %v", err)
		}
		if a2, _ := s.Account(ctx, "alice"); a2 != a {
			t.Errorf("refusals moved money: %+v", a2)
		}
	})
}

// The cashier's op ids are unique across players: reused for another
// player, amount or direction they are a conflict; replayed, the first
// answer — even once the player's own record of it is gone.
func TestCashierOps(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if m, err := s.Cashier(ctx, "deposit", "ann", "op-1", 700); err != nil || m != (Moved{Balance: 700}) {
			t.Fatalf("deposit: %+v %v", m, err)
		}
		for _, c := range []struct {
			kind, player string
			amount       int64
		}{{"deposit", "ann", 800}, {"deposit", "bea", 700}, {"withdraw", "ann", 700}} {
			if _, err := s.Cashier(ctx, c.kind, c.player, "op-1", c.amount); !errors.Is(err, ErrOpConflict) {
				t.Errorf("op-1 reused for %+v: %v", c, err)
			}
		}
		s.rdb.Del(ctx, keysOf("ann").op("ops-op-1")) // the player's record lost
		if m, err := s.Cashier(ctx, "deposit", "ann", "op-1", 700); err != nil || m != (Moved{Balance: 700, Replay: true}) {
			t.Fatalf("replay: %+v %v", m, err)
		}
		if a, _ := s.Account(ctx, "ann"); a.Balance != 700 || a.Deposited != 700 {
			t.Fatalf("account %+v", a)
		}
		s.Cashier(ctx, "deposit", "ann", "op-2", 300)
		s.rdb.Del(ctx, cashierKey("op-2")) // the cross-player record lost instead
		if m, err := s.Cashier(ctx, "deposit", "ann", "op-2", 300); err != nil || m != (Moved{Balance: 1000, Replay: true}) {
			t.Fatalf("replay without the op's claim: %+v %v", m, err)
		}
		if a, _ := s.Account(ctx, "ann"); a.Deposited != 1000 {
			t.Fatalf("a replay credited again: %+v", a)
		}
		// Idempotency does not forget: no operation record expires.
		fence, _ := s.Claim(ctx, "ann", time.Minute)
		if _, _, err := placeFair(ctx, s, "ann", fence, ticket(t, "ann", "tk", 1, 100)); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{cashierKey("op-1"), keysOf("ann").op("ops-op-2"), keysOf("ann").op("t-tk")} {
			if ttl, err := s.rdb.TTL(ctx, key).Result(); err != nil || ttl != -1 {
				t.Errorf("%s: TTL %v %v, want none", key, ttl, err)
			}
		}
		if _, err := s.Cashier(ctx, "deposit", "ann", "", 700); !errors.Is(err, ErrBadCashierOp) {
			t.Fatalf("empty op: %v", err)
		}
		mustBooks(t, s)
	})
}

// Contention on one player's journal head is absorbed: concurrent
// deposits are all credited.
func TestConcurrentDeposits(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Cashier(ctx, "deposit", "cal", fmt.Sprint("c", i), 100)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if a, _ := s.Account(ctx, "cal"); a.Balance != n*100 {
			t.Fatalf("balance %d, want %d", a.Balance, n*100)
		}
		mustBooks(t, s)
	})
}

// Self-exclusion blocks deposits and bets at once (withdrawals stay
// open), lasts 1 day to 12 months, and cannot be changed while it runs.
func TestSelfExclusion(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.Deposit(ctx, "xena", "d", 5000)
		now := time.Now()
		for _, bad := range []time.Duration{time.Hour, 366 * 24 * time.Hour} {
			if _, _, err := s.SetLimit(ctx, "xena", "excluded_until", now.Add(bad).UnixMilli()); err == nil {
				t.Errorf("exclusion of %s accepted", bad)
			}
		}
		until := now.Add(48 * time.Hour).UnixMilli()
		if _, _, err := s.SetLimit(ctx, "xena", "excluded_until", until); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Deposit(ctx, "xena", "d2", 100); !errors.Is(err, &Error{Code: "limit_reached", Reason: "self_excluded"}) {
			t.Fatalf("deposit while excluded: %v", err)
		}
		fence, _ := s.Claim(ctx, "xena", time.Minute)
		if _, _, err := placeFair(ctx, s, "xena", fence, ticket(t, "xena", "t", 1, 100)); !errors.Is(err, &Error{Code: "limit_reached", Reason: "self_excluded"}) {
			t.Fatalf("bet while excluded: %v", err)
		}
		if m, err := s.Withdraw(ctx, "xena", "w", 1000); err != nil || m.Balance != 4000 {
			t.Fatalf("withdrawal while excluded: %+v %v", m, err)
		}
		for _, other := range []int64{until - 3600_000, until + 30*24*3600_000} { // shorten, extend
			_, _, err := s.SetLimit(ctx, "xena", "excluded_until", other)
			if !errors.Is(err, ErrExclusion) || err.(*Error).Limit != until {
				t.Errorf("changing a running exclusion to %d: %v", other, err)
			}
		}
		if _, _, err := s.SetLimit(ctx, "xena", "excluded_until", until); err != nil { // the same again: a no-op
			t.Errorf("re-saving the same exclusion: %v", err)
		}
		if l, _ := s.Limits(ctx, "xena"); l.ExcludedUntil != until {
			t.Errorf("excluded until %d, want %d", l.ExcludedUntil, until)
		}
		// Limits are integers within bounds: no float ever reaches Redis.
		if _, _, err := s.SetLimit(ctx, "xena", "loss_limit", 100_000_000_000_000_000); !errors.Is(err, ErrBadAmount) {
			t.Errorf("loss limit 1e17: %v", err)
		}
		if _, _, err := s.SetLimit(ctx, "xena", "loss_limit", MaxAmount); err != nil {
			t.Fatal(err)
		}
		if l, _ := s.Limits(ctx, "xena"); l.LossLimit != MaxAmount {
			t.Errorf("loss limit stored as %d", l.LossLimit)
		}
		mustBooks(t, s)
	})
}

// The bet rate is held by the bet itself: refusals say when to retry,
// spend nothing, and a retried bet that landed is not counted twice.
func TestBetRate(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now()
		s.Now = func() time.Time { return now }
		s.cfg.BetRate = Rate{PerSecond: 2, Burst: 3}
		s.Deposit(ctx, "rita", "d", 10_000)
		fence, _ := s.Claim(ctx, "rita", time.Minute)
		// A bet refused for another reason moved nothing: it spends none
		// of the budget, and the whole burst still lands after it.
		s.cfg.TicketMax = 400
		if _, _, err := placeFair(ctx, s, "rita", fence, ticket(t, "rita", "big", 5, 100)); !errors.Is(err, ErrLimit) {
			t.Fatalf("a ticket over the maximum: %v", err)
		}
		s.cfg.TicketMax = DefaultConfig().TicketMax
		for i := range 3 {
			tk := ticket(t, "rita", fmt.Sprint("b", i), 1, 100)
			if _, _, err := placeFair(ctx, s, "rita", fence, tk); err != nil {
				t.Fatalf("bet %d of the burst: %v", i, err)
			}
			if _, dup, err := placeFair(ctx, s, "rita", fence, tk); err != nil || !dup {
				t.Fatalf("retried bet %d: dup=%v %v", i, dup, err)
			}
		}
		_, _, err := placeFair(ctx, s, "rita", fence, ticket(t, "rita", "b3", 1, 100))
		var we *Error
		if !errors.As(err, &we) || !errors.Is(err, ErrRateLimited) || we.Retry <= 0 || we.Retry > 500*time.Millisecond {
			t.Fatalf("fourth bet at once: %v", err)
		}
		if a, _ := s.Account(ctx, "rita"); a.Balance != 10_000-300 {
			t.Fatalf("a refused bet moved money: balance %d", a.Balance)
		}
		now = now.Add(we.Retry)
		if _, _, err := placeFair(ctx, s, "rita", fence, ticket(t, "rita", "b3", 1, 100)); err != nil {
			t.Fatalf("after the advised wait: %v", err)
		}
		// Another player's budget is their own.
		s.Deposit(ctx, "sam", "d", 1_000)
		fs, _ := s.Claim(ctx, "sam", time.Minute)
		if _, _, err := placeFair(ctx, s, "sam", fs, ticket(t, "sam", "s", 1, 100)); err != nil {
			t.Fatalf("another player: %v", err)
		}
	})
}

func TestBetSettleExactlyOnce(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.Deposit(ctx, "bob", "d", 10_000)
		fence, _ := s.Claim(ctx, "bob", time.Minute)
		tk := ticket(t, "bob", "t1", 3, 200)
		bal, dup, err := placeFair(ctx, s, "bob", fence, tk)
		if err != nil || dup || bal != 10_000-600 {
			t.Fatalf("bet: %d %v %v", bal, dup, err)
		}
		// The same ticket again (a client retry): no second debit.
		if bal2, dup, err := placeFair(ctx, s, "bob", fence, tk); err != nil || !dup || bal2 != bal {
			t.Fatalf("retried bet: %d %v %v", bal2, dup, err)
		}
		open, _ := s.OpenGames(ctx, "bob")
		if len(open) != 3 || open[0].Index != 0 || open[2].Index != 2 || open[1].Outcome.Numbers != tk.Games[1].Outcome.Numbers {
			t.Fatalf("open games not recorded with their outcomes: %+v", open)
		}
		g := open[0]
		if err := s.Choose(ctx, "bob", fence, g.ID, ChoiceContinue, "1"); err != nil {
			t.Fatal(err)
		}
		if err := s.Choose(ctx, "bob", fence, g.ID, ChoiceContinue, "0"); !errors.Is(err, ErrAlreadyChosen) {
			t.Fatalf("changed a final choice: %v", err)
		}
		res, _ := engine.Default().Settle(&g.Outcome, engine.Choices{Continue: true})
		res.Win = 1234 // any amount: the wallet pays what it is told, once
		// Many concurrent settlements of the same game: exactly one pays.
		var wg sync.WaitGroup
		var paid, dups int
		var mu sync.Mutex
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, err := s.Settle(ctx, "bob", fence, g.ID, res)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
				} else if st.Dup {
					dups++
				} else {
					paid++
				}
			}()
		}
		wg.Wait()
		if paid != 1 || dups != 19 {
			t.Fatalf("paid %d times, %d duplicates", paid, dups)
		}
		a, _ := s.Account(ctx, "bob")
		if a.Balance != 10_000-600+1234 || a.House != 600-1234 {
			t.Fatalf("account after settle %+v", a)
		}
		st, _ := s.Game(ctx, "bob", g.ID)
		if st.Status != "settled" || st.Win != 1234 || st.Continue == nil || !*st.Continue || st.Result == nil {
			t.Fatalf("settled game %+v", st)
		}
		if err := s.Choose(ctx, "bob", fence, g.ID, ChoiceBox, "1"); !errors.Is(err, ErrSettled) {
			t.Fatalf("choice on a settled game: %v", err)
		}
		mustBooks(t, s)
	})
}

func TestBetRefusals(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.Deposit(ctx, "carol", "d", 1000)
		fence, _ := s.Claim(ctx, "carol", time.Minute)
		before, _ := s.Account(ctx, "carol")

		_, _, err := placeFair(ctx, s, "carol", fence, ticket(t, "carol", "big", 5, 200+0*1))
		if err != nil {
			t.Fatalf("a 10 € ticket on a 10 € balance: %v", err)
		}
		var e *Error
		_, _, err = placeFair(ctx, s, "carol", fence, ticket(t, "carol", "t2", 1, 100))
		if !errors.As(err, &e) || e.Code != "insufficient_funds" || e.Available != 0 {
			t.Fatalf("bet on empty balance: %v", err)
		}
		s.Deposit(ctx, "carol", "d2", 500)

		// A stale session (taken over) cannot bet.
		newFence, _ := s.Claim(ctx, "carol", time.Minute)
		if _, _, err := placeFair(ctx, s, "carol", fence, ticket(t, "carol", "t3", 1, 100)); !errors.Is(err, ErrFenced) {
			t.Fatalf("stale fence: %v", err)
		}
		fence = newFence

		// Daily loss limit: 10 € already staked today; a limit of 10.50 € leaves 0.50 €.
		if now, _, err := s.SetLimit(ctx, "carol", "loss_limit", 1050); err != nil || !now {
			t.Fatalf("set loss limit: %v %v", now, err)
		}
		_, _, err = placeFair(ctx, s, "carol", fence, ticket(t, "carol", "t4", 1, 100))
		if !errors.As(err, &e) || e.Reason != "loss_limit" || e.Limit != 1050 || e.Available != 50 {
			t.Fatalf("loss limit: %v", err)
		}
		if _, _, err := placeFair(ctx, s, "carol", fence, ticket(t, "carol", "t5", 1, 50)); err != nil {
			t.Fatalf("bet within the loss limit: %v", err)
		}
		// Raising the loss limit waits for the delay.
		if now, at, _ := s.SetLimit(ctx, "carol", "loss_limit", 100_000); now || at == 0 {
			t.Fatalf("raise applied at once")
		}
		if _, _, err := placeFair(ctx, s, "carol", fence, ticket(t, "carol", "t6", 1, 50)); !errors.Is(err, &Error{Code: "limit_reached", Reason: "loss_limit"}) {
			t.Fatalf("raised limit applied early: %v", err)
		}
		s.Now = func() time.Time { return time.Now().Add(s.cfg.RaiseDelay + time.Minute) }
		if _, _, err := placeFair(ctx, s, "carol", fence, ticket(t, "carol", "t7", 1, 50)); err != nil {
			t.Fatalf("raised limit after its delay: %v", err)
		}
		s.Now = time.Now

		// Self-exclusion: no bet until the date.
		s.SetLimit(ctx, "carol", "excluded_until", time.Now().Add(25*time.Hour).UnixMilli())
		if _, _, err := placeFair(ctx, s, "carol", fence, ticket(t, "carol", "t8", 1, 50)); !errors.Is(err, &Error{Code: "limit_reached", Reason: "self_excluded"}) {
			t.Fatalf("self-excluded bet: %v", err)
		}
		// Shortening an exclusion is not possible.
		s.SetLimit(ctx, "carol", "excluded_until", time.Now().UnixMilli())
		if l, _ := s.Limits(ctx, "carol"); l.ExcludedUntil < time.Now().Add(24*time.Hour).UnixMilli() {
			t.Fatalf("exclusion was shortened: %+v", l)
		}

		after, _ := s.Account(ctx, "carol")
		if after.Balance != before.Balance+500-1000-50-50 {
			t.Fatalf("refusals moved money: %+v → %+v", before, after)
		}
		mustBooks(t, s)
	})
}

// A bet writes its games' recovery entries with it — in its own script on
// one Redis, just before it in a Cluster (another node holds the index) —
// and on one Redis a refused bet writes none.
func TestBetWritesItsRecoveryEntries(t *testing.T) {
	check := func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.Deposit(ctx, "rita", "d", 300)
		fence, _ := s.Claim(ctx, "rita", time.Minute)
		due := time.Now().Add(time.Minute).Truncate(time.Millisecond)
		tk := ticket(t, "rita", "t1", 2, 100)
		tk.Due = due
		if _, _, err := placeFair(ctx, s, "rita", fence, tk); err != nil {
			t.Fatal(err)
		}
		if early, _ := s.Recovery().Due(ctx, due.Add(-time.Millisecond), 10); len(early) != 0 {
			t.Fatalf("entries due before their time: %+v", early)
		}
		got, err := s.Recovery().Due(ctx, due, 10)
		if err != nil || len(got) != 2 || !slices.Contains(got, DueGame{"rita", "t1-0"}) || !slices.Contains(got, DueGame{"rita", "t1-1"}) {
			t.Fatalf("after the bet: %+v %v, want t1's two games", got, err)
		}
		refused := ticket(t, "rita", "t2", 2, 100) // 2 € on 1 € left
		refused.Due = due
		if _, _, err := placeFair(ctx, s, "rita", fence, refused); err == nil {
			t.Fatal("a bet over the balance was accepted")
		}
		want := int64(2)
		if s.cluster() {
			want = 4 // written before the refusal: stale, and dropped by a sweep
		}
		if n, _ := s.Recovery().Count(ctx); n != want {
			t.Fatalf("after a refused bet: %d entries, want %d", n, want)
		}
	}
	eachBackend(t, check)
	t.Run("cluster", func(t *testing.T) { check(t, newStore(t, redistest.StartCluster(t, 3, 0).Client())) })
}

func TestTicketMax(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.cfg.TicketMax = 500 // a 5 € ceiling keeps the test small; production is 500 €
		s.Deposit(ctx, "dan", "d", 10_000)
		fence, _ := s.Claim(ctx, "dan", time.Minute)
		_, _, err := placeFair(ctx, s, "dan", fence, ticket(t, "dan", "t", 3, 200))
		if !errors.Is(err, &Error{Code: "limit_reached", Reason: "ticket_max"}) {
			t.Fatalf("6 € ticket over a 5 € max: %v", err)
		}
	})
}

func TestDepositCap(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.cfg.DefaultDepositCap = 10_000
		if _, err := s.Deposit(ctx, "eve", "d1", 8000); err != nil {
			t.Fatal(err)
		}
		_, err := s.Deposit(ctx, "eve", "d2", 3000)
		var e *Error
		if !errors.As(err, &e) || e.Reason != "deposit_cap" || e.Limit != 10_000 || e.Available != 2000 {
			t.Fatalf("over the weekly cap: %v", err)
		}
		// Lowering applies at once.
		if now, _, _ := s.SetLimit(ctx, "eve", "deposit_cap", 8500); !now {
			t.Fatal("lowering the cap was delayed")
		}
		if _, err := s.Deposit(ctx, "eve", "d3", 1000); !errors.Is(err, ErrLimit) {
			t.Fatalf("lowered cap not applied: %v", err)
		}
		// Raising waits; after the delay it applies (and the week has rolled).
		s.SetLimit(ctx, "eve", "deposit_cap", 50_000)
		if _, err := s.Deposit(ctx, "eve", "d4", 1000); !errors.Is(err, ErrLimit) {
			t.Fatalf("raised cap applied early: %v", err)
		}
		l, _ := s.Limits(ctx, "eve")
		if l.DepositCap != 8500 || l.DepositCapPending != 50_000 || l.DepositedWeek != 8000 {
			t.Fatalf("limits %+v", l)
		}
		// The summary's single round trip reads the same.
		acct, sl, err := s.Standing(ctx, "eve")
		if err != nil || acct.Balance != 8000 || sl != l {
			t.Fatalf("standing: %+v %+v %v, want balance 8000 and %+v", acct, sl, err, l)
		}
		s.Now = func() time.Time { return time.Now().Add(s.cfg.RaiseDelay + time.Hour) }
		if _, err := s.Deposit(ctx, "eve", "d5", 40_000); err != nil {
			t.Fatalf("after the delay: %v", err)
		}
		mustBooks(t, s)
	})
}

func TestJournalSealedAndVerified(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		fence, tk := placedTicket(t, s, "fay")
		s.Choose(ctx, "fay", fence, tk.Games[0].ID, ChoiceBox, "2")
		res, _ := engine.Default().Settle(&tk.Games[0].Outcome, engine.Choices{Box: 2})
		if _, err := s.Settle(ctx, "fay", fence, tk.Games[0].ID, res); err != nil {
			t.Fatal(err)
		}
		// A second store (another server) with a cold head cache writes too.
		other := newStore(t, s.rdb)
		if _, err := other.Deposit(ctx, "fay", "d2", 100); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Deposit(ctx, "fay", "d3", 100); err != nil { // this one's cached head is stale now
			t.Fatal(err)
		}

		checked, damaged, err := s.Verify(ctx)
		if err != nil || checked != 1 || len(damaged) != 0 {
			t.Fatalf("verify intact: %d %v %v", checked, damaged, err)
		}
		entries, _ := s.Journal(ctx, "fay")
		if len(entries) != 6 {
			t.Fatalf("%d journal entries, want 6 (deposit, bet, choice, settle, deposit, deposit): %v", len(entries), entries)
		}

		// Alter one entry's data in place (rewrite the stream with one byte changed).
		key := keysOf("fay").journal()
		msgs, _ := s.rdb.XRange(ctx, key, "-", "+").Result()
		s.rdb.Del(ctx, key)
		for i, m := range msgs {
			if i == 1 {
				m.Values["data"] = m.Values["data"].(string)[:20] + "9" + m.Values["data"].(string)[21:]
			}
			s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: m.ID, Values: m.Values})
		}
		_, damaged, _ = s.Verify(ctx)
		if len(damaged) != 1 || damaged[0].Player != "fay" || damaged[0].Problems[0].Seq != 2 {
			t.Fatalf("altered entry not caught: %+v", damaged)
		}
	})
}

func TestHistoryPaging(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.Deposit(ctx, "gus", "d", 10_000)
		fence, _ := s.Claim(ctx, "gus", time.Minute)
		for i := 0; i < 4; i++ {
			if _, _, err := placeFair(ctx, s, "gus", fence, ticket(t, "gus", fmt.Sprint("t", i), 2, 50)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(3 * time.Millisecond)
		}
		var seen []string
		before := int64(0)
		for {
			page, err := s.History(ctx, "gus", before, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, g := range page {
				seen = append(seen, g.ID)
			}
			before = page[len(page)-1].Cursor
		}
		want := []string{"t3-1", "t3-0", "t2-1", "t2-0", "t1-1", "t1-0", "t0-1", "t0-0"}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Fatalf("history %v, want %v", seen, want)
		}
	})
}

// History pages never skip nor repeat: 40 tickets of 5 grids placed
// within the same millisecond, read one game a page, give each of the 200
// games exactly once, newest first.
func TestHistoryPagesAreTotallyOrdered(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now()
		s.Now = func() time.Time { return now } // every bet in one millisecond: the hardest case for a time cursor
		s.cfg.BetRate = Rate{}
		s.Deposit(ctx, "ivy", "d", 20_000)
		fence, _ := s.Claim(ctx, "ivy", time.Minute)
		var want []string
		for i := range 40 {
			tk := ticket(t, "ivy", fmt.Sprintf("t%02d", i), 5, 50)
			if _, _, err := placeFair(ctx, s, "ivy", fence, tk); err != nil {
				t.Fatal(err)
			}
			for j := range 5 {
				want = append([]string{tk.Games[j].ID}, want...)
			}
		}
		var seen []string
		for before := int64(0); ; {
			page, err := s.History(ctx, "ivy", before, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			seen = append(seen, page[0].ID)
			before = page[0].Cursor
			if len(seen) > 250 {
				t.Fatal("history never ends")
			}
		}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Fatalf("%d games seen, want the 200 in order:\n%v\n%v", len(seen), seen, want)
		}
	})
}

func TestOwnership(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, _ := s.Claim(ctx, "hal", time.Minute)
		if tok, _ := s.ClaimIfFree(ctx, "hal", time.Minute); tok != "" {
			t.Fatal("claimed an owned player")
		}
		b, _ := s.Claim(ctx, "hal", time.Minute)
		if a == b {
			t.Fatal("takeover reused the token")
		}
		if ok, _ := s.Renew(ctx, "hal", a, time.Minute); ok {
			t.Fatal("stale owner renewed")
		}
		s.Release(ctx, "hal", a) // no effect: not the owner
		if o, _ := s.Owner(ctx, "hal"); o != b {
			t.Fatal("stale release removed the owner")
		}
		s.Release(ctx, "hal", b)
		if tok, _ := s.ClaimIfFree(ctx, "hal", time.Minute); tok == "" {
			t.Fatal("free player not claimable")
		}
	})
}

func TestFairSeeds(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		in, err := s.Fair(ctx, "ivy")
		st := in.Public()
		if err != nil || len(st.Commit) != 64 || st.NextNonce != 1 {
			t.Fatalf("fair state %+v %v", st, err)
		}
		s.SetClientSeed(ctx, "ivy", "lucky")
		seed, client, first, _ := s.Seeds(ctx, "ivy", 3)
		if client != "lucky" || first != 1 || engine.SeedCommitment(seed) != st.Commit {
			t.Fatalf("seeds: %q %d", client, first)
		}
		if _, _, next, _ := s.Seeds(ctx, "ivy", 1); next != 4 {
			t.Fatalf("nonce after 3 reserved = %d", next)
		}
		revealed, games, commit, _ := s.RotateSeed(ctx, "ivy")
		if engine.SeedCommitment(mustHex(t, revealed)) != st.Commit || games != 4 || commit == st.Commit {
			t.Fatalf("rotation revealed %s (%d games)", revealed, games)
		}
	})
}

func mustHex(t *testing.T, s string) []byte {
	b, err := engine.DecodeSeed(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Verify holds the account, the journal's tail and every stored game
// record to the sealed journal: each kind of tampering is reported, and a
// tampered record is never shown.
func TestVerifyCatchesTampering(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		// play gives a player a deposit, a settled 2-game ticket (a box
		// chosen in the first game) and an open 1-game ticket.
		play := func(player string) (settled, open string) {
			s.Deposit(ctx, player, "d", 5000)
			fence, _ := s.Claim(ctx, player, time.Minute)
			tk := ticket(t, player, player+"-t", 2, 100)
			if _, _, err := placeFair(ctx, s, player, fence, tk); err != nil {
				t.Fatal(err)
			}
			s.Choose(ctx, player, fence, tk.Games[0].ID, ChoiceBox, "2")
			for i, c := range []engine.Choices{{Box: 2}, {}} {
				res, _ := engine.Default().Settle(&tk.Games[i].Outcome, c)
				if _, err := s.Settle(ctx, player, fence, tk.Games[i].ID, res); err != nil {
					t.Fatal(err)
				}
			}
			s.Deposit(ctx, player, "d2", 100)
			tk2 := ticket(t, player, player+"-u", 1, 100)
			if _, _, err := placeFair(ctx, s, player, fence, tk2); err != nil {
				t.Fatal(err)
			}
			return tk.Games[0].ID, tk2.Games[0].ID
		}
		k := func(p string) keys { return keysOf(p) }
		cases := []struct {
			name   string
			tamper func(p, settled, open string)
			want   string
		}{
			{"newest entry deleted", func(p, _, _ string) {
				last, _ := s.rdb.XRevRangeN(ctx, k(p).journal(), "+", "-", 1).Result()
				s.rdb.XDel(ctx, k(p).journal(), last[0].ID)
			}, "journal tail missing"},
			{"newest three deleted", func(p, _, _ string) {
				last, _ := s.rdb.XRevRangeN(ctx, k(p).journal(), "+", "-", 3).Result()
				for _, m := range last {
					s.rdb.XDel(ctx, k(p).journal(), m.ID)
				}
			}, "journal tail missing"},
			{"whole journal deleted", func(p, _, _ string) { s.rdb.Del(ctx, k(p).journal()) }, "journal missing"},
			{"an entry in the middle deleted", func(p, _, _ string) {
				second, _ := s.rdb.XRangeN(ctx, k(p).journal(), "-", "+", 2).Result()
				s.rdb.XDel(ctx, k(p).journal(), second[1].ID)
			}, "out of order or missing: expected seq 2"},
			{"record altered", func(p, settled, _ string) {
				rec, _ := s.rdb.HGet(ctx, k(p).game(settled), "rec").Result()
				s.rdb.HSet(ctx, k(p).game(settled), "rec", strings.Replace(rec, `"boxes":[`, `"boxes":[77700,`, 1))
			}, "record altered"},
			{"win altered", func(p, settled, _ string) { s.rdb.HSet(ctx, k(p).game(settled), "win", "999999") }, "settlement altered"},
			{"result altered", func(p, settled, _ string) {
				res, _ := s.rdb.HGet(ctx, k(p).game(settled), "result").Result()
				s.rdb.HSet(ctx, k(p).game(settled), "result", strings.Replace(res, `"matches":`, `"matches":1`, 1))
			}, "settlement altered"},
			{"settled record deleted", func(p, settled, _ string) { s.rdb.Del(ctx, k(p).game(settled)) }, "settled, but its record is missing"},
			{"choice altered", func(p, settled, _ string) { s.rdb.HSet(ctx, k(p).game(settled), ChoiceBox, "4") }, "choice box"},
			{"open record deleted", func(p, _, open string) { s.rdb.Del(ctx, k(p).game(open)) }, "open, but its record is missing"},
			{"balance altered", func(p, _, _ string) { s.rdb.HIncrBy(ctx, k(p).acct(), "balance", 10_000) }, "account differs from its journal"},
			{"record forged", func(p, settled, _ string) {
				m, _ := s.rdb.HGetAll(ctx, k(p).game(settled)).Result()
				s.rdb.HSet(ctx, k(p).game("forged-0"), m)
			}, "game forged-0: a stored record that no sealed bet placed"},
		}
		for i, tc := range cases {
			p := fmt.Sprint("v", i)
			settled, open := play(p)
			if _, damaged, err := s.Verify(ctx); err != nil || len(damaged) != 0 {
				t.Fatalf("%s: intact player reported: %+v %v", tc.name, damaged, err)
			}
			tc.tamper(p, settled, open)
			_, damaged, err := s.Verify(ctx)
			if err != nil || len(damaged) != 1 || damaged[0].Player != p || !strings.Contains(fmt.Sprint(damaged[0].Problems), tc.want) {
				t.Errorf("%s: want a report of %q for %s, got %+v %v", tc.name, tc.want, p, damaged, err)
			}
			if strings.HasSuffix(tc.name, " altered") && tc.name != "balance altered" {
				// What a player would be shown is refused, not the altered copy.
				if _, err := s.Game(ctx, p, settled); !errors.Is(err, ErrDamaged) {
					t.Errorf("%s: Game shows the altered record: %v", tc.name, err)
				}
				if _, err := s.History(ctx, p, 0, 10); !errors.Is(err, ErrDamaged) {
					t.Errorf("%s: History shows the altered record: %v", tc.name, err)
				}
			}
			for _, key := range []string{k(p).acct(), k(p).journal()} { // out of the next cases' way
				s.rdb.Del(ctx, key)
			}
			ids, _ := s.rdb.Keys(ctx, "{p:"+p+"}:game:*").Result()
			for _, id := range ids {
				s.rdb.Del(ctx, id)
			}
		}
	})
}

// The owner's bets and settlements extend its lease (a player at play
// needs no separate renewal); a stale session's attempt extends nothing.
func TestMoneyOperationsExtendTheLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		s.cfg.LeaseTTL = time.Minute
		s.Deposit(ctx, "lea", "d", 10_000)
		fence, _ := s.Claim(ctx, "lea", 2*time.Second)
		ttl := func() time.Duration {
			t.Helper()
			d, err := s.rdb.PTTL(ctx, keysOf("lea").owner()).Result()
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		tk := ticket(t, "lea", "t1", 1, 100)
		if _, _, err := placeFair(ctx, s, "lea", fence, tk); err != nil {
			t.Fatal(err)
		}
		if d := ttl(); d < 30*time.Second {
			t.Fatalf("after a bet the lease has %v left, want about a minute", d)
		}
		s.rdb.PExpire(ctx, keysOf("lea").owner(), 2*time.Second)
		res, _ := engine.Default().Settle(&tk.Games[0].Outcome, engine.Choices{})
		if _, err := s.Settle(ctx, "lea", fence, "t1-0", res); err != nil {
			t.Fatal(err)
		}
		if d := ttl(); d < 30*time.Second {
			t.Fatalf("after a settlement the lease has %v left", d)
		}
		s.rdb.PExpire(ctx, keysOf("lea").owner(), 2*time.Second)
		if _, _, err := placeFair(ctx, s, "lea", "stale", ticket(t, "lea", "t2", 1, 100)); !errors.Is(err, ErrFenced) {
			t.Fatalf("a stale fence: %v", err)
		}
		if d := ttl(); d > 2*time.Second {
			t.Fatalf("a stale session's bet extended the lease to %v", d)
		}
	})
}

// What a ticket summary reads agrees with the full standing, a limit
// change that has come into force included.
func TestStakeStandingAgreesWithStanding(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now()
		s.Now = func() time.Time { return now }
		s.Deposit(ctx, "stan", "d", 5_000)
		s.SetLimit(ctx, "stan", "loss_limit", 2_000)
		s.SetLimit(ctx, "stan", "loss_limit", 3_000) // a raise: pending for RaiseDelay
		fence, _ := s.Claim(ctx, "stan", time.Minute)
		if _, _, err := placeFair(ctx, s, "stan", fence, ticket(t, "stan", "t", 1, 200)); err != nil {
			t.Fatal(err)
		}
		for _, at := range []time.Time{now, now.Add(s.cfg.RaiseDelay + time.Minute)} {
			now = at
			acct, lim, err := s.Standing(ctx, "stan")
			if err != nil {
				t.Fatal(err)
			}
			st, err := s.StakeStanding(ctx, "stan")
			if err != nil {
				t.Fatal(err)
			}
			want := StakeStanding{Balance: acct.Balance, LossLimit: lim.LossLimit, LostToday: lim.LostToday, ExcludedUntil: lim.ExcludedUntil}
			if st != want || st.Balance != 4_800 {
				t.Fatalf("at %v: %+v, want %+v", at, st, want)
			}
		}
		if st, _ := s.StakeStanding(ctx, "nobody"); st.Balance != 0 || st.LossLimit != -1 {
			t.Fatalf("a player never seen: %+v", st)
		}
	})
}

// The day's loss (stakes less wins, which the loss limit weighs) counts
// from 0 each UTC day: a bet and a win on one day, then the next day's.
func TestDailyLossStartsEachDay(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Date(2026, 12, 4, 23, 59, 0, 0, time.UTC)
		s.Now = func() time.Time { return now }
		s.Deposit(ctx, "dora", "d", 10_000)
		s.SetLimit(ctx, "dora", "loss_limit", 1_000)
		fence, _ := s.Claim(ctx, "dora", time.Minute)
		lost := func(want int64) {
			t.Helper()
			l, err := s.Limits(ctx, "dora")
			st, err2 := s.StakeStanding(ctx, "dora")
			if err != nil || err2 != nil || l.LostToday != want || st.LostToday != want {
				t.Fatalf("%v: lost today %d (limits), %d (summary), want %d (%v %v)", now, l.LostToday, st.LostToday, want, err, err2)
			}
		}
		settle := func(id string, win int64) {
			t.Helper()
			st, err := s.Game(ctx, "dora", id)
			if err != nil {
				t.Fatal(err)
			}
			res, _ := engine.Default().Settle(&st.Outcome, engine.Choices{})
			res.Win = win
			if _, err := s.Settle(ctx, "dora", fence, id, res); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := placeFair(ctx, s, "dora", fence, ticket(t, "dora", "a", 3, 200)); err != nil {
			t.Fatal(err)
		}
		lost(600)
		settle("a-0", 100)
		lost(500)
		var e *Error
		if _, _, err := placeFair(ctx, s, "dora", fence, ticket(t, "dora", "b", 3, 200)); !errors.As(err, &e) || e.Reason != "loss_limit" || e.Available != 500 {
			t.Fatalf("over the day's limit: %v", err)
		}

		now = now.Add(2 * time.Minute) // the next UTC day
		lost(0)
		if _, _, err := placeFair(ctx, s, "dora", fence, ticket(t, "dora", "c", 4, 200)); err != nil {
			t.Fatalf("a new day's bet within the limit: %v", err)
		}
		settle("c-0", 300)
		lost(500)
		if a, _ := s.Account(ctx, "dora"); a.Balance != 10_000-600+100-800+300 {
			t.Fatalf("balance %d", a.Balance)
		}
		mustBooks(t, s)
	})
}

// A day's loss counted by an earlier build (a key of its own) is folded
// into the account at start, once, added to what this build counted.
func TestEarlierBuildsDailyLossIsFolded(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		now := time.Now()
		s.Now = func() time.Time { return now }
		s.Deposit(ctx, "olga", "d", 10_000)
		fence, _ := s.Claim(ctx, "olga", time.Minute)
		if _, _, err := placeFair(ctx, s, "olga", fence, ticket(t, "olga", "a", 1, 200)); err != nil {
			t.Fatal(err)
		}
		old := "{p:olga}:loss:" + now.UTC().Format("20060102")
		s.rdb.Set(ctx, old, 700, 48*time.Hour)                                                           // before the upgrade
		s.rdb.Set(ctx, "{p:olga}:loss:"+now.UTC().Add(-24*time.Hour).Format("20060102"), 900, time.Hour) // yesterday's: left to expire
		for i, want := range []int{1, 0} {
			if n, err := s.FoldDailyLosses(ctx); err != nil || n != want {
				t.Fatalf("fold %d: %d moved, %v", i, n, err)
			}
			if l, _ := s.Limits(ctx, "olga"); l.LostToday != 900 {
				t.Fatalf("fold %d: lost today %d, want 200 + 700", i, l.LostToday)
			}
		}
		if n, _ := s.rdb.Exists(ctx, old).Result(); n != 0 {
			t.Fatal("the old counter was kept")
		}
	})
}

// The archiver takes a movement's ledger row from its journal entry, and
// still moves (then trims) the rows an earlier build wrote to a ledger
// stream of their own.
func TestMovableLedgerRows(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		k := keysOf("lea")
		old := time.Now().Add(-time.Hour).UnixMilli()
		s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.ledger(), ID: fmt.Sprintf("%d-0", old),
			Values: []any{"t", old, "kind", "deposit", "amount", 700, "balance", 700, "ref", "0"}})
		s.Deposit(ctx, "lea", "d", 1_000)
		s.Withdraw(ctx, "lea", "w", 300)
		m, err := s.Movable(ctx, "lea", journal.Head{}, time.Now().Add(time.Second), 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range m.Ledger {
			got = append(got, fmt.Sprintf("%s %d %d", r.Kind, r.Amount, r.Balance))
		}
		if want := "deposit 1000 1000,withdraw -300 700,deposit 700 700"; strings.Join(got, ",") != want || len(m.Entries) != 2 {
			t.Fatalf("rows %q, want %q; %d entries", got, want, len(m.Entries))
		}
		if err := s.Trim(ctx, m); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.rdb.Exists(ctx, k.ledger(), k.journal()).Result(); n != 0 {
			t.Fatalf("%d streams left after the trim", n)
		}
	})
}

// A game's last choice is recorded with its settlement in one script, as
// Choose then Settle would: the same fields, seals and journal entries.
func TestSettleChoosing(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		fence, tk := placedTicket(t, s, "ida")
		tab := engine.Default()
		g0, g1 := tk.Games[0], tk.Games[1]

		stop := Choice{ChoiceContinue, "0"}
		res, _ := tab.Settle(&g0.Outcome, engine.Choices{})
		_, before := s.Batches()
		st, err := s.SettleChoosing(ctx, "ida", fence, g0.ID, stop, res)
		if _, after := s.Batches(); err != nil || st.Dup || st.Balance != 5000-200+res.Win || after != before+1 {
			t.Fatalf("settle with the stop: %+v %v, %d scripts", st, err, after-before)
		}
		got, err := s.Game(ctx, "ida", g0.ID) // refused if a seal did not match
		if err != nil || got.Status != "settled" || got.Continue == nil || *got.Continue || got.ContinueAt == 0 || got.Win != res.Win {
			t.Fatalf("settled game: %+v %v", got, err)
		}
		// A retry (its first answer lost) finds the game settled with this
		// choice: a duplicate. Another choice was not recorded: refused.
		if again, err := s.SettleChoosing(ctx, "ida", fence, g0.ID, stop, res); err != nil || !again.Dup || again.Win != res.Win {
			t.Fatalf("settled twice: %+v %v", again, err)
		}
		if _, err := s.SettleChoosing(ctx, "ida", fence, g0.ID, Choice{ChoiceBox, "1"}, res); !errors.Is(err, ErrSettled) {
			t.Fatalf("a choice on a game settled without it: %v", err)
		}

		// A different choice recorded before stands: nothing is settled.
		if err := s.Choose(ctx, "ida", fence, g1.ID, ChoiceBox, "2"); err != nil {
			t.Fatal(err)
		}
		res1, _ := tab.Settle(&g1.Outcome, engine.Choices{Box: 3})
		if _, err := s.SettleChoosing(ctx, "ida", fence, g1.ID, Choice{ChoiceBox, "3"}, res1); !errors.Is(err, ErrAlreadyChosen) {
			t.Fatalf("a second, different choice: %v", err)
		}
		if open, _ := s.OpenGames(ctx, "ida"); len(open) != 1 || open[0].ID != g1.ID || *open[0].Box != 2 {
			t.Fatalf("open games after the refusal: %+v", open)
		}
		// The same choice recorded before is not recorded twice.
		res1, _ = tab.Settle(&g1.Outcome, engine.Choices{Box: 2})
		if st, err := s.SettleChoosing(ctx, "ida", fence, g1.ID, Choice{ChoiceBox, "2"}, res1); err != nil || st.Dup {
			t.Fatalf("settle with the box chosen before: %+v %v", st, err)
		}

		entries, _ := s.Journal(ctx, "ida")
		var kinds []string
		for _, e := range entries {
			var d struct{ Kind string }
			json.Unmarshal([]byte(e.Data), &d)
			kinds = append(kinds, d.Kind)
		}
		if want := "deposit bet choice settle choice settle"; strings.Join(kinds, " ") != want {
			t.Fatalf("journal %q, want %q", kinds, want)
		}
		if checked, damaged, err := s.Verify(ctx); err != nil || checked != 1 || len(damaged) != 0 {
			t.Fatalf("verify: %d %+v %v", checked, damaged, err)
		}
		mustBooks(t, s)
	})
}
