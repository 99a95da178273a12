package wallet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The outbox (seamless mode, WALLET=seamless): per player, one hash in the
// player's slot of the calls to the operator's wallet that are owed until
// the operator acknowledges them. Its invariant: every debit that may have
// been applied and whose bet has not landed has an entry — first "in
// flight" (d:<ticket>, written before the debit is sent), then "rolled
// back" (r:<ticket>); every settled game's credit has an entry (c:<game>,
// written by the settlement itself) until acknowledged. Hence:
//
//   - Intend, before a debit is sent (while the ticket's summary is shown,
//     or with its confirmation);
//   - the bet takes the in-flight entry out as its last check (bet.lua), so
//     a debit is either played or rolled back, never both;
//   - Drop, when the operator refused the debit (it moved nothing);
//   - RollBack turns an in-flight entry into a rollback owed (the bet was
//     refused, or the debit's answer was lost, or its session died);
//   - the settlement adds its credit (settle.lua);
//   - Ack removes an acknowledged call and records it (the game's
//     "credited" field, a rollback's record) for reconcile; a call that
//     was retried leaves a read of the balance owed (b:<ms>), since its
//     answer may be the first attempt's again;
//   - Retry puts a failed call off (backoff).
//
// What finds an outbox after a crash is the recovery index: a ticket's
// games keep their entries there until their money is acknowledged.
type Outbox struct{ s *Store }

// Outbox returns the players' outboxes.
func (s *Store) Outbox() Outbox { return Outbox{s} }

// Kinds of outbox calls.
const (
	KindDebit    = "debit" // in flight: rolled back unless its bet lands
	KindRollback = "rollback"
	KindCredit   = "credit"
	KindBalance  = "balance" // a read: the balance a retried call answered may be stale
)

// Call is an outbox entry: an operator call owed.
type Call struct {
	Kind    string `json:"kind"`
	Player  string `json:"player"`
	Tx      string `json:"tx"`
	Round   string `json:"round"`
	Amount  int64  `json:"amount,omitempty"`
	DebitTx string `json:"debit_tx,omitempty"`
	Game    string `json:"game,omitempty"`
	Since   int64  `json:"since"` // ms: written
	Due     int64  `json:"due"`   // ms: not sent before (an in-flight debit: not rolled back before)
	Tries   int    `json:"tries,omitempty"`
	Last    string `json:"last,omitempty"` // the last failure
}

// The operator transaction ids (protocol/OPERATOR.md): a ticket's debit,
// its rollback, a game's credit.
func DebitTx(ticket string) string    { return "d-" + ticket }
func rollbackTx(ticket string) string { return "r-" + ticket }
func creditTx(game string) string     { return "c-" + game }

func debitField(ticket string) string    { return "d:" + ticket }
func rollbackField(ticket string) string { return "r:" + ticket }

func (c Call) field() string {
	switch c.Kind {
	case KindDebit:
		return debitField(c.Round)
	case KindRollback:
		return rollbackField(c.Round)
	case KindBalance:
		return "b:" + strconv.FormatInt(c.Since, 10)
	}
	return "c:" + c.Game
}

func (c Call) encode() string {
	b, _ := json.Marshal(c)
	return string(b)
}

var intendScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1`)

// Intend records a ticket's debit as in flight, before it is sent; after
// due, any server may roll it back if its bet has not landed. A ticket
// whose debit was rolled back already is refused (ErrRolledBack): its
// transaction id is spent.
func (o Outbox) Intend(ctx context.Context, player, ticket string, amount int64, due time.Time) error {
	if !ValidPlayer(player) {
		return ErrBadPlayer
	}
	c := Call{Kind: KindDebit, Player: player, Tx: DebitTx(ticket), Round: ticket, Amount: amount, Since: o.s.nowMS(), Due: due.UnixMilli()}
	k := keysOf(player)
	cmd, err := o.s.eval(ctx, intendScript, []string{k.outbox(), k.op(rollbackTx(ticket))}, c.field(), rollbackField(ticket), c.encode())
	if err != nil {
		return err
	}
	if n, err := cmd.Int(); err != nil || n == 0 {
		return cmp.Or(err, error(ErrRolledBack))
	}
	return nil
}

// Drop forgets an in-flight debit the operator refused (it moved nothing).
func (o Outbox) Drop(ctx context.Context, player, ticket string) error {
	key := keysOf(player).outbox()
	return o.s.durably(ctx, key, func(p redis.Pipeliner) { p.HDel(ctx, key, debitField(ticket)) })
}

var rollbackScript = redis.NewScript(`
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  return 1
end
return redis.call('HEXISTS', KEYS[1], ARGV[2])`)

// RollBack turns a ticket's in-flight debit into a rollback owed, unless
// its bet landed. It returns the rollback to send, and false when there is
// none (the bet landed, or the rollback was acknowledged already).
func (o Outbox) RollBack(ctx context.Context, player, ticket string) (Call, bool, error) {
	now := o.s.nowMS()
	c := Call{Kind: KindRollback, Player: player, Tx: rollbackTx(ticket), Round: ticket, DebitTx: DebitTx(ticket), Since: now, Due: now}
	cmd, err := o.s.eval(ctx, rollbackScript, []string{keysOf(player).outbox()}, debitField(ticket), c.field(), c.encode())
	if err != nil {
		return Call{}, false, err
	}
	n, err := cmd.Int()
	return c, n == 1, err
}

// Pending returns a player's outbox, oldest first.
func (o Outbox) Pending(ctx context.Context, player string) ([]Call, error) {
	m, err := o.s.rdb.HGetAll(ctx, keysOf(player).outbox()).Result()
	if err != nil {
		return nil, err
	}
	return parseCalls(m), nil
}

func parseCalls(m map[string]string) []Call {
	out := make([]Call, 0, len(m))
	for _, v := range m {
		var c Call
		if json.Unmarshal([]byte(v), &c) == nil {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Since < out[j].Since })
	return out
}

var retryScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 0`)

// Retry records a failed attempt at c and puts the next off until
// c.Due (unless c was acknowledged meanwhile).
func (o Outbox) Retry(ctx context.Context, c Call) error {
	_, err := o.s.eval(ctx, retryScript, []string{keysOf(c.Player).outbox()}, c.field(), c.encode())
	return err
}

var ackScript = redis.NewScript(showBalanceLua + `
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
show_balance(KEYS[2], ARGV[2], ARGV[6])
if ARGV[3] == 'credit' then
  if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('HSET', KEYS[3], 'credited', ARGV[4]) end
elseif ARGV[3] == 'rollback' then
  redis.call('SET', KEYS[3], ARGV[4], 'EX', ARGV[5])
end
if ARGV[7] ~= '' then redis.call('HSET', KEYS[1], ARGV[7], ARGV[8]) end
return 1`)

// Ack removes a call the operator acknowledged, with the balance it
// answered (to the call sent at sentAt, ms), and keeps its trace: a credit
// marks its game "credited", a rollback leaves a record (reconcile reads
// both). The operator answers a retried call with its first answer, whose
// balance may be older than one answered since: it is taken as of the
// call's writing, so that it never hides a later answer, and a read of the
// balance is owed — returned, to be sent — so that the balance shown is
// the operator's once nothing is owed.
func (o Outbox) Ack(ctx context.Context, c Call, balance, sentAt int64) (read Call, owed bool, err error) {
	k := keysOf(c.Player)
	third := k.game(c.Game)
	if c.Kind != KindCredit {
		third = k.op(c.Tx)
	}
	keep := int64((o.s.cfg.History + 24*time.Hour).Seconds())
	field, body := "", ""
	if c.Tries > 0 && c.Kind != KindBalance {
		sentAt = c.Since
		now := o.s.nowMS()
		read = Call{Kind: KindBalance, Player: c.Player, Since: now, Due: now}
		field, body = read.field(), read.encode()
	}
	cmd, err := o.s.eval(ctx, ackScript, []string{k.outbox(), k.acct(), third}, c.field(), balance, c.Kind, c.Amount, keep, sentAt, field, body)
	if err != nil {
		return Call{}, false, err
	}
	n, err := cmd.Int()
	return read, n == 1 && field != "", err
}

var showScript = redis.NewScript(showBalanceLua + `show_balance(KEYS[1], ARGV[1], ARGV[2]) return 0`)

// ShowBalance records the operator's balance, answered to a call sent at
// sentAt (ms), as the one shown — unless a later call's answer is.
func (o Outbox) ShowBalance(ctx context.Context, player string, balance, sentAt int64) error {
	return showScript.Run(ctx, o.s.rdb, []string{keysOf(player).acct()}, balance, sentAt).Err()
}

// Backlog is every outbox's content (an audit tool: it scans).
func (o Outbox) Backlog(ctx context.Context) ([]Call, error) {
	var out []Call
	err := scanKeys(ctx, o.s.rdb, "{p:*}:outbox", func(c *redis.Client, key string) error {
		m, err := c.HGetAll(ctx, key).Result()
		out = append(out, parseCalls(m)...)
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Since < out[j].Since })
	return out, err
}

// FailingTries: an owed call that failed this many times is failing —
// someone should look at the operator's wallet.
const FailingTries = 5

// OwedTally sums calls owed: how many, of which kind, how many failed
// before, how many are failing, and the oldest's age.
type OwedTally struct {
	Owed     int            `json:"owed"`
	ByKind   map[string]int `json:"by_kind"`
	Retried  int            `json:"retried"` // failed at least once
	Failing  int            `json:"failing"` // failed FailingTries times or more
	OldestMS int64          `json:"oldest_ms,omitempty"`
}

// Tally sums calls as of now.
func Tally(calls []Call, now time.Time) OwedTally {
	t := OwedTally{Owed: len(calls), ByKind: map[string]int{}}
	for _, c := range calls {
		t.ByKind[c.Kind]++
		if c.Tries > 0 {
			t.Retried++
		}
		if c.Tries >= FailingTries {
			t.Failing++
		}
		t.OldestMS = max(t.OldestMS, now.UnixMilli()-c.Since)
	}
	return t
}

// ErrRolledBack refuses a bet whose debit was rolled back meanwhile.
var ErrRolledBack = &Error{Code: CodeRolledBack}

// ErrSpent joins a refusal of a ticket whose debit was sent: its
// transaction id is spent (rolled back), so the ticket cannot be confirmed
// again; it must be built again.
var ErrSpent = errors.New("wallet: the ticket's debit was rolled back; build the ticket again")
