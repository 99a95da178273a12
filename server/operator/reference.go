package operator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"
)

// Faults are what the reference wallet does wrong, each a share of calls.
type Faults struct {
	Errors     float64       // answer 500 without doing anything
	Timeouts   float64       // hang for Hang (past the caller's timeout); done or not, at random
	Lost       float64       // do it, then drop the connection without an answer
	Duplicates float64       // do it twice, as a retrying network would deliver it
	Slow       float64       // answer after SlowBy
	Hang       time.Duration // a timeout's hang (default 3 s)
	SlowBy     time.Duration // a slow answer's delay (default 500 ms)
	Latency    time.Duration // every answer's delay (the wallet's own speed)
	Calls      []string      // the calls (paths) that misbehave; none: every one
}

func (f Faults) withDefaults() Faults {
	if f.Hang == 0 {
		f.Hang = 3 * time.Second
	}
	if f.SlowBy == 0 {
		f.SlowBy = 500 * time.Millisecond
	}
	return f
}

// Book is one player's account at the reference wallet. It always holds
// that Balance = Deposits − Debited + Credited, where Debited counts the
// debits applied and not rolled back.
type Book struct {
	Player     string           `json:"player"`
	Balance    int64            `json:"balance"`
	Deposits   int64            `json:"deposits"`
	Debited    int64            `json:"debited"`
	Credited   int64            `json:"credited"`
	RolledBack int64            `json:"rolled_back"` // the amount of the debits rolled back
	Rounds     map[string]int64 `json:"rounds"`      // debit tx → amount, of debits applied and not rolled back
	Credits    map[string]int64 `json:"credits"`     // credit tx → amount
	Rollbacks  int              `json:"rollbacks"`   // debits cancelled (applied, then rolled back)
}

// Reference is a small operator wallet implementing protocol/OPERATOR.md,
// in memory, with injectable faults: the other side of the contract for
// tests and load runs. An unknown player is opened with Fund cents (a
// deposit).
type Reference struct {
	key    []byte
	faults Faults
	fund   int64

	mu      sync.Mutex
	players map[string]*Book
	txs     map[string]answered // tx → the first request and answer
	rolled  map[string]bool     // debit tx → rolled back (a later debit with it is refused)
	debits  map[string]applied  // debit tx → what it took
	blocked map[string]bool
	counts  map[string]int // faults injected, by kind
}

type answered struct {
	req    [sha256.Size]byte // the request body's digest, to tell a retry from a conflicting reuse (a load run keeps millions)
	status int
	body   []byte
}

type applied struct {
	player string
	amount int64
}

// NewReference returns a reference wallet verifying calls with key.
func NewReference(key []byte, fund int64, f Faults) *Reference {
	return &Reference{key: key, faults: f.withDefaults(), fund: fund, players: map[string]*Book{}, txs: map[string]answered{},
		rolled: map[string]bool{}, debits: map[string]applied{}, blocked: map[string]bool{}, counts: map[string]int{}}
}

// SetFaults changes what the wallet does wrong from now on.
func (r *Reference) SetFaults(f Faults) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = f.withDefaults()
}

// Block makes the wallet refuse the player's debits with player_blocked.
func (r *Reference) Block(player string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.blocked[player] = on
}

// Books returns every player's book, sorted by player.
func (r *Reference) Books() []Book {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Book, 0, len(r.players))
	for _, b := range r.players {
		c := *b
		c.Rounds, c.Credits = copyMap(b.Rounds), copyMap(b.Credits)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Player < out[j].Player })
	return out
}

func copyMap(m map[string]int64) map[string]int64 {
	c := make(map[string]int64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// RefBooks is the answer of POST /ref/books.
type RefBooks struct {
	Books  []Book         `json:"books"`
	Faults map[string]int `json:"faults"`
}

// FetchBooks asks a reference wallet at url (another process) for its
// books, signed with key.
func FetchBooks(ctx context.Context, url string, key []byte) (RefBooks, error) {
	var out RefBooks
	body := []byte("{}")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/ref/books", bytes.NewReader(body))
	if err != nil {
		return out, err
	}
	SignRequest(req, key, body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("reference wallet books: %s", resp.Status)
	}
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// Holds reports whether the book adds up: balance = deposits − debits
// standing + credits.
func (b Book) Holds() bool { return b.Balance == b.Deposits-b.Debited+b.Credited }

// Agrees reports whether the book shows exactly a journal's bets and
// settlements: debited the staked total in one debit per bet, credited
// the won total in one credit per settled game.
func (b Book) Agrees(staked int64, bets int, won int64, settlements int) bool {
	return b.Debited == staked && len(b.Rounds) == bets && b.Credited == won && len(b.Credits) == settlements
}

// Faulted returns how many faults of each kind were injected.
func (r *Reference) Faulted() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := make(map[string]int, len(r.counts))
	for k, v := range r.counts {
		c[k] = v
	}
	return c
}

// ServeHTTP serves the four calls, plus POST /ref/books (every book) for
// tests and the load tester, all signed.
func (r *Reference) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<10))
	if err != nil || req.Method != http.MethodPost {
		refuse(w, http.StatusBadRequest, "bad_request", "POST a JSON body")
		return
	}
	if why := Verify(r.key, req.Header, body, time.Now()); why != "" {
		refuse(w, http.StatusUnauthorized, "unauthorized", why)
		return
	}
	var do func() (int, []byte)
	switch req.URL.Path {
	case PathBalance:
		var c BalanceCall
		if !decode(w, body, &c) {
			return
		}
		do = func() (int, []byte) { return r.balance(c.Player) }
	case PathDebit:
		var c DebitCall
		if !decode(w, body, &c) {
			return
		}
		do = func() (int, []byte) { return r.once(c.Tx, body, func() (int, []byte) { return r.debit(c) }) }
	case PathCredit:
		var c CreditCall
		if !decode(w, body, &c) {
			return
		}
		do = func() (int, []byte) { return r.once(c.Tx, body, func() (int, []byte) { return r.credit(c) }) }
	case PathRollback:
		var c RollbackCall
		if !decode(w, body, &c) {
			return
		}
		do = func() (int, []byte) { return r.once(c.Tx, body, func() (int, []byte) { return r.rollback(c) }) }
	case "/ref/books":
		b, _ := json.Marshal(RefBooks{Books: r.Books(), Faults: r.Faulted()})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	default:
		refuse(w, http.StatusNotFound, "not_found", "no such call")
		return
	}
	r.serveFaulty(w, req, do)
}

// serveFaulty does the call, or misbehaves as the faults say.
func (r *Reference) serveFaulty(w http.ResponseWriter, req *http.Request, do func() (int, []byte)) {
	r.mu.Lock()
	f := r.faults
	r.mu.Unlock()
	x := rand.Float64()
	if len(f.Calls) > 0 && !slices.Contains(f.Calls, req.URL.Path) {
		x = 2 // not one of the calls that misbehave
	}
	fault := ""
	switch {
	case x < f.Errors:
		fault = "error"
	case x < f.Errors+f.Timeouts:
		fault = "timeout"
	case x < f.Errors+f.Timeouts+f.Lost:
		fault = "lost"
	case x < f.Errors+f.Timeouts+f.Lost+f.Duplicates:
		fault = "duplicate"
	case x < f.Errors+f.Timeouts+f.Lost+f.Duplicates+f.Slow:
		fault = "slow"
	}
	if fault != "" {
		r.mu.Lock()
		r.counts[fault]++
		r.mu.Unlock()
	}
	wait := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-req.Context().Done():
		}
	}
	wait(f.Latency)
	switch fault {
	case "error":
		refuse(w, http.StatusInternalServerError, "internal", "injected error")
		return
	case "timeout":
		if rand.IntN(2) == 0 {
			do()
		}
		wait(f.Hang)
		refuse(w, http.StatusGatewayTimeout, "timeout", "injected timeout")
		return
	case "lost":
		do()
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream
	case "duplicate":
		do()
	case "slow":
		wait(f.SlowBy)
	}
	status, body := do()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// once runs a money call the first time its tx is seen and answers every
// later call with the first answer; the same tx with another body is a
// conflict, which moves nothing.
func (r *Reference) once(tx string, req []byte, do func() (int, []byte)) (int, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tx == "" {
		return errorBody(http.StatusBadRequest, "bad_request", "tx is required")
	}
	if a, ok := r.txs[tx]; ok {
		if a.req != sha256.Sum256(req) {
			return errorBody(http.StatusConflict, "tx_conflict", "this tx was used for another request")
		}
		return a.status, a.body
	}
	status, body := do()
	r.txs[tx] = answered{sha256.Sum256(req), status, body}
	return status, body
}

// book returns the player's book, opening it with the starting fund. r.mu held.
func (r *Reference) book(player string) *Book {
	b, ok := r.players[player]
	if !ok {
		b = &Book{Player: player, Balance: r.fund, Deposits: r.fund, Rounds: map[string]int64{}, Credits: map[string]int64{}}
		r.players[player] = b
	}
	return b
}

func (r *Reference) balance(player string) (int, []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if player == "" {
		return errorBody(http.StatusBadRequest, "bad_request", "player is required")
	}
	return ok(r.book(player).Balance)
}

func (r *Reference) debit(c DebitCall) (int, []byte) {
	switch {
	case c.Player == "" || c.Round == "" || c.Amount <= 0:
		return errorBody(http.StatusBadRequest, "bad_request", "player, round and a positive amount are required")
	case r.rolled[c.Tx]:
		return errorBody(http.StatusConflict, "rolled_back", "this debit was rolled back before it arrived")
	case r.blocked[c.Player]:
		return errorBody(http.StatusForbidden, "player_blocked", "the player is blocked")
	}
	b := r.book(c.Player)
	if b.Balance < c.Amount {
		return errorBody(http.StatusPaymentRequired, "insufficient_funds", "the balance is too low")
	}
	b.Balance -= c.Amount
	b.Debited += c.Amount
	b.Rounds[c.Tx] = c.Amount
	r.debits[c.Tx] = applied{c.Player, c.Amount}
	return ok(b.Balance)
}

func (r *Reference) credit(c CreditCall) (int, []byte) {
	if c.Player == "" || c.Round == "" || c.Amount < 0 {
		return errorBody(http.StatusBadRequest, "bad_request", "player, round and an amount ≥ 0 are required")
	}
	if d, ok := r.debits[c.DebitTx]; !ok || d.player != c.Player || r.rolled[c.DebitTx] {
		return errorBody(http.StatusConflict, "no_debit", "no applied debit "+c.DebitTx+" for this player")
	}
	b := r.book(c.Player)
	b.Balance += c.Amount
	b.Credited += c.Amount
	b.Credits[c.Tx] = c.Amount
	return ok(b.Balance)
}

func (r *Reference) rollback(c RollbackCall) (int, []byte) {
	if c.Player == "" || c.DebitTx == "" {
		return errorBody(http.StatusBadRequest, "bad_request", "player and debit_tx are required")
	}
	b := r.book(c.Player)
	if !r.rolled[c.DebitTx] {
		r.rolled[c.DebitTx] = true
		if d, ok := r.debits[c.DebitTx]; ok && d.player == c.Player {
			b.Balance += d.amount
			b.Debited -= d.amount
			b.RolledBack += d.amount
			b.Rollbacks++
			delete(b.Rounds, c.DebitTx)
		}
	}
	return ok(b.Balance)
}

func ok(balance int64) (int, []byte) {
	b, _ := json.Marshal(map[string]int64{"balance": balance})
	return http.StatusOK, b
}

func errorBody(status int, code, msg string) (int, []byte) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	return status, b
}

func refuse(w http.ResponseWriter, status int, code, msg string) {
	s, b := errorBody(status, code, msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(s)
	w.Write(b)
}

func decode(w http.ResponseWriter, body []byte, v any) bool {
	if err := json.Unmarshal(body, v); err != nil {
		refuse(w, http.StatusBadRequest, "bad_request", "the body is not the call's JSON: "+err.Error())
		return false
	}
	return true
}
