package operator

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

var key = []byte("test-operator-key-0123456789abcdef")

func TestSignatureChecks(t *testing.T) {
	body := []byte(`{"player":"ann"}`)
	now := time.Now()
	h := http.Header{}
	h.Set(HeaderTimestamp, strconv.FormatInt(now.UnixMilli(), 10))
	h.Set(HeaderSignature, Sign(key, now.UnixMilli(), body))
	if why := Verify(key, h, body, now); why != "" {
		t.Fatalf("a good call refused: %s", why)
	}
	for name, c := range map[string]struct {
		key  []byte
		body []byte
		at   time.Time
	}{
		"other key":  {[]byte("another key of the same length......"), body, now},
		"other body": {key, []byte(`{"player":"bob"}`), now},
		"stale":      {key, body, now.Add(6 * time.Minute)},
	} {
		if why := Verify(c.key, h, c.body, c.at); why == "" {
			t.Errorf("%s: accepted", name)
		}
	}
	h.Del(HeaderTimestamp)
	if Verify(key, h, body, now) == "" {
		t.Error("a call without a timestamp accepted")
	}
}

func TestClientTellsRefusedFromUnanswered(t *testing.T) {
	ref := NewReference(key, 1_000, Faults{Hang: 300 * time.Millisecond})
	srv := httptest.NewServer(ref)
	defer srv.Close()
	ctx := context.Background()
	c := NewClient(srv.URL, key, "EUR", 100*time.Millisecond)
	if bal, err := c.Debit(ctx, DebitCall{Player: "ann", Tx: "d-1", Round: "1", Amount: 300}); err != nil || bal != 700 {
		t.Fatalf("debit: %d %v", bal, err)
	}
	// The same tx again: the first answer, nothing moved.
	if bal, err := c.Debit(ctx, DebitCall{Player: "ann", Tx: "d-1", Round: "1", Amount: 300}); err != nil || bal != 700 {
		t.Fatalf("replayed debit: %d %v", bal, err)
	}
	// The same tx for another request: a conflict, nothing moved.
	var refused *Refused
	if _, err := c.Debit(ctx, DebitCall{Player: "ann", Tx: "d-1", Round: "1", Amount: 400}); !errors.As(err, &refused) || refused.Code != "tx_conflict" {
		t.Fatalf("reused tx: %v", err)
	}
	if _, err := c.Debit(ctx, DebitCall{Player: "ann", Tx: "d-2", Round: "2", Amount: 5_000}); !errors.As(err, &refused) || refused.Code != "insufficient_funds" {
		t.Fatalf("too large a debit: %v", err)
	}
	// A rollback cancels an applied debit once; one that never arrived is
	// acknowledged, and that debit is refused if it comes later.
	for i := 0; i < 2; i++ {
		if bal, err := c.Rollback(ctx, RollbackCall{Player: "ann", Tx: "r-1", Round: "1", DebitTx: "d-1"}); err != nil || bal != 1_000 {
			t.Fatalf("rollback: %d %v", bal, err)
		}
	}
	if _, err := c.Rollback(ctx, RollbackCall{Player: "ann", Tx: "r-3", Round: "3", DebitTx: "d-3"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Debit(ctx, DebitCall{Player: "ann", Tx: "d-3", Round: "3", Amount: 100}); !errors.As(err, &refused) || refused.Code != "rolled_back" {
		t.Fatalf("a debit after its rollback: %v", err)
	}
	if _, err := c.Credit(ctx, CreditCall{Player: "ann", Tx: "c-1", Round: "1", Amount: 50, DebitTx: "d-1"}); !errors.As(err, &refused) || refused.Code != "no_debit" {
		t.Fatalf("a credit of a rolled-back round: %v", err)
	}
	for _, f := range []Faults{{Errors: 1}, {Timeouts: 1}, {Lost: 1}} {
		ref.SetFaults(f)
		if _, err := c.Balance(ctx, "ann"); !errors.Is(err, ErrUnanswered) {
			t.Errorf("%+v: %v, want unanswered", f, err)
		}
	}
	ref.SetFaults(Faults{})
	bad := NewClient(srv.URL, []byte("not the operator's key............"), "EUR", time.Second)
	if _, err := bad.Balance(ctx, "ann"); !errors.As(err, &refused) || refused.Code != "unauthorized" {
		t.Fatalf("a call signed with another key: %v", err)
	}
	resp, err := http.Post(srv.URL+PathBalance, "application/json", bytes.NewReader([]byte(`{"player":"ann"}`)))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unsigned call: %v %v", resp.StatusCode, err)
	}
	b := ref.Books()[0]
	if b.Balance != 1_000 || !b.Holds() || b.Rollbacks != 1 {
		t.Fatalf("book: %+v", b)
	}
}

// A caller can tell the operator's time from its own: the calls made
// under Timing add theirs to its stopwatch, answered or not; others not.
func TestStopwatchSumsTheOperatorsTime(t *testing.T) {
	ref := NewReference(key, 1_000, Faults{Latency: 40 * time.Millisecond})
	srv := httptest.NewServer(ref)
	defer srv.Close()
	c := NewClient(srv.URL, key, "EUR", time.Second)
	var w Stopwatch
	ctx := Timing(context.Background(), &w)
	if _, err := c.Balance(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Debit(ctx, DebitCall{Player: "ann", Tx: "d-1", Round: "1", Amount: 5_000}); err == nil {
		t.Fatal("a debit past the balance was accepted")
	}
	if got := w.Total(); got < 80*time.Millisecond {
		t.Fatalf("two calls of ≥ 40 ms each summed %v", got)
	}
	before := w.Total()
	if _, err := c.Balance(context.Background(), "ann"); err != nil {
		t.Fatal(err)
	}
	if w.Total() != before {
		t.Fatal("a call outside Timing was counted")
	}
}
