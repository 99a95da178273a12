package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// The calls' bodies (protocol/OPERATOR.md).
type (
	BalanceCall struct {
		Player string `json:"player"`
	}
	DebitCall struct {
		Player   string `json:"player"`
		Tx       string `json:"tx"`
		Round    string `json:"round"`
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
	}
	CreditCall struct {
		Player   string `json:"player"`
		Tx       string `json:"tx"`
		Round    string `json:"round"`
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
		DebitTx  string `json:"debit_tx"`
	}
	RollbackCall struct {
		Player  string `json:"player"`
		Tx      string `json:"tx"`
		Round   string `json:"round"`
		DebitTx string `json:"debit_tx"`
	}
)

// Paths of the calls.
const (
	PathBalance  = "/wallet/balance"
	PathDebit    = "/wallet/debit"
	PathCredit   = "/wallet/credit"
	PathRollback = "/wallet/rollback"
)

// Refused is the operator's answer that it did not do the call, with its
// code (insufficient_funds, player_blocked, limit_reached, …). A refused
// debit moved nothing.
type Refused struct {
	Status  int
	Code    string
	Message string
}

func (e *Refused) Error() string {
	return fmt.Sprintf("operator refused (%d %s): %s", e.Status, e.Code, e.Message)
}

// ErrUnanswered wraps every failure after which the call may or may not
// have been applied: a timeout, a reset connection, a 5xx, an answer that
// does not parse. Such a debit is rolled back; such a credit or rollback is
// sent again.
var ErrUnanswered = errors.New("operator: no usable answer")

// Client makes signed calls to the operator's wallet. Safe for concurrent use.
type Client struct {
	url      string
	key      []byte
	currency string
	timeout  time.Duration
	hc       *http.Client
	// Observe, when set, is told of every call: its path, outcome (ok,
	// refused, unanswered) and duration.
	Observe func(path, outcome string, took time.Duration)
}

// NewClient calls the operator at url (OPERATOR_URL), signing with key, each
// call bounded by timeout.
func NewClient(url string, key []byte, currency string, timeout time.Duration) *Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 512 // one wallet, many concurrent players
	return &Client{url: strings.TrimRight(url, "/"), key: key, currency: currency, timeout: timeout, hc: &http.Client{Transport: t}}
}

// Balance reads a player's balance at the operator.
func (c *Client) Balance(ctx context.Context, player string) (int64, error) {
	return c.call(ctx, PathBalance, BalanceCall{player})
}

// Debit takes a ticket's stake; idempotent by d.Tx.
func (c *Client) Debit(ctx context.Context, d DebitCall) (int64, error) {
	d.Currency = c.currency
	return c.call(ctx, PathDebit, d)
}

// Credit pays a game's win (0 included); idempotent by cr.Tx.
func (c *Client) Credit(ctx context.Context, cr CreditCall) (int64, error) {
	cr.Currency = c.currency
	return c.call(ctx, PathCredit, cr)
}

// Rollback cancels a debit, applied or not; idempotent by r.Tx.
func (c *Client) Rollback(ctx context.Context, r RollbackCall) (int64, error) {
	return c.call(ctx, PathRollback, r)
}

// Stopwatch sums the time spent waiting on the operator's wallet by the
// calls made under a context from Timing: its caller can tell its own time
// from the operator's (admission control judges the game server and
// Redis, not a wallet it cannot speed up).
type Stopwatch struct{ ns atomic.Int64 }

// Total is the time summed so far.
func (w *Stopwatch) Total() time.Duration { return time.Duration(w.ns.Load()) }

type stopwatchKey struct{}

// Timing returns a context under which every call adds its time to w.
func Timing(ctx context.Context, w *Stopwatch) context.Context {
	return context.WithValue(ctx, stopwatchKey{}, w)
}

func (c *Client) call(ctx context.Context, path string, body any) (balance int64, err error) {
	start := time.Now()
	defer func() {
		if w, ok := ctx.Value(stopwatchKey{}).(*Stopwatch); ok {
			w.ns.Add(int64(time.Since(start)))
		}
		if c.Observe != nil {
			outcome := "ok"
			if errors.Is(err, ErrUnanswered) {
				outcome = "unanswered"
			} else if err != nil {
				outcome = "refused"
			}
			c.Observe(path, outcome, time.Since(start))
		}
	}()
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+path, bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	SignRequest(req, c.key, b)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrUnanswered, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, fmt.Errorf("%w: %s: reading the answer: %v", ErrUnanswered, path, err)
	}
	var ans struct {
		Balance *int64 `json:"balance"`
		Error   *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	jerr := json.Unmarshal(raw, &ans)
	switch {
	case resp.StatusCode == http.StatusOK && jerr == nil && ans.Balance != nil:
		return *ans.Balance, nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && jerr == nil && ans.Error != nil && ans.Error.Code != "":
		return 0, &Refused{Status: resp.StatusCode, Code: ans.Error.Code, Message: ans.Error.Message}
	}
	return 0, fmt.Errorf("%w: %s: HTTP %d %.200q", ErrUnanswered, path, resp.StatusCode, raw)
}
