// Package wallet keeps all money, games and player limits in Redis. Each
// money operation is one atomic Lua script, idempotent by an operation id
// (or the game id for settlements), that also appends a sealed journal
// entry, with the ledger row (the player's statement) of the money moved.
// Every key of a player carries the same {hash tag} so the scripts run
// unchanged on Redis Cluster.
//
// Books: each player's account holds, besides the balance, the house's net
// take from that player ("house" = stakes − wins). So for every player, at
// every instant, balance + house = deposited − withdrawn, and summing over
// players gives the operator's books without any cross-slot write.
package wallet

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/server/journal"
)

// Config holds the wallet's policy figures.
type Config struct {
	DefaultDepositCap int64         // weekly deposit cap, cents, until the player sets one
	TicketMax         int64         // no ticket above this total, cents (500 €)
	RaiseDelay        time.Duration // before a raised limit applies
	History           time.Duration // how far back the history goes (31 days)
	// ReplicaAcks: money operations wait (WAIT) for this many replicas to
	// have the write before they are reported done, so a failover cannot
	// lose an acknowledged bet or payout. 0 with no replicas.
	ReplicaAcks    int
	ReplicaTimeout time.Duration
	BetRate        Rate          // bets per player; checked by the bet itself
	LeaseTTL       time.Duration // the owner's bets, choices and settlements extend its lease this long (0: they do not)
}

// Rate is PerSecond events a second on average, Burst at once; a zero
// PerSecond sets no limit.
type Rate struct {
	PerSecond float64
	Burst     int
}

// gcra is the rate as the generic cell rate algorithm uses it: the interval
// between events and how far ahead of it a burst may run.
func (r Rate) gcra() (interval, tolerance time.Duration) {
	if r.PerSecond <= 0 {
		return 0, 0
	}
	interval = max(time.Millisecond, time.Duration(float64(time.Second)/r.PerSecond))
	return interval, interval * time.Duration(max(r.Burst, 1)-1)
}

// DefaultConfig is the production policy.
func DefaultConfig() Config {
	return Config{
		DefaultDepositCap: 100_000,
		TicketMax:         50_000,
		RaiseDelay:        7 * 24 * time.Hour,
		History:           31 * 24 * time.Hour,
		ReplicaTimeout:    500 * time.Millisecond,
		BetRate:           Rate{PerSecond: 5, Burst: 10}, // generous for people, tight for scripts
		LeaseTTL:          30 * time.Second,
	}
}

// run executes a script that answers a list ({'ok'|'dup'|'err', …}).
func (s *Store) run(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]any, error) {
	cmd, err := s.eval(ctx, script, keys, args...)
	if err != nil {
		return nil, err
	}
	return cmd.Slice()
}

// together sends the reads add queues with the next batch of scripts (one
// Redis turn for both), or alone where scripts go alone (durability.go).
// Each read carries its own answer and error; together's error says they
// were not sent.
func (s *Store) together(ctx context.Context, add func(redis.Pipeliner)) error {
	if !s.waits() {
		return s.commit.read(ctx, s.rdb, add)
	}
	pipe := s.rdb.Pipeline()
	add(pipe)
	pipe.Exec(ctx)
	return nil
}

// eval executes a script on the master that owns keys[0], in a batch with
// other callers' (commit.go). When the durability contract needs a wait
// (durability.go), the script goes alone, the wait after it in the same
// pipeline, and a write not confirmed durable in time is reported as
// ErrNotDurable (refusals, which write nothing, are not).
func (s *Store) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error) {
	if !s.waits() {
		return s.commit.run(ctx, s.rdb, script, keys, args...), nil
	}
	node, err := s.node(ctx, keys[0])
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		var res *redis.Cmd
		durable := s.withWait(ctx, node, func(pipe redis.Pipeliner) { res = script.EvalSha(ctx, pipe, keys, args...) })
		if err := res.Err(); err != nil {
			if redis.HasErrorPrefix(err, "NOSCRIPT") && attempt == 0 {
				if err := script.Load(ctx, node).Err(); err != nil {
					return nil, err
				}
				continue
			}
			return res, nil
		}
		if r, ok := res.Val().([]any); ok && str(r, 0) == "err" {
			return res, nil
		}
		if !durable {
			return nil, ErrNotDurable
		}
		return res, nil
	}
}

// durably runs plain commands (queued by queue) under the durability
// contract, on the master that owns key.
func (s *Store) durably(ctx context.Context, key string, queue func(redis.Pipeliner)) error {
	if !s.waits() {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { queue(p); return nil })
		return err
	}
	node, err := s.node(ctx, key)
	if err != nil {
		return err
	}
	if !s.withWait(ctx, node, queue) {
		return ErrNotDurable
	}
	return nil
}

// cluster reports whether Redis is a Cluster: keys of different hash
// slots cannot be written by one script.
func (s *Store) cluster() bool {
	_, ok := s.rdb.(*redis.ClusterClient)
	return ok
}

// node is the client of the master that owns key (the store's own client
// when Redis is not a cluster).
func (s *Store) node(ctx context.Context, key string) (redis.Cmdable, error) {
	if c, ok := s.rdb.(*redis.ClusterClient); ok {
		return c.MasterForKey(ctx, key)
	}
	return s.rdb, nil
}

// MaxAmount bounds every amount and money limit (1 000 000 €; the same
// bound as the protocol's, TestAmountBoundsAgree): Lua computes in doubles, exact to 2^53.
const MaxAmount = 100_000_000

var (
	//go:embed lua/prelude.lua
	prelude string
	//go:embed lua/show_balance.lua
	showBalanceLua string // seamless mode's; the small outbox scripts take it alone
	//go:embed lua/deposit.lua
	depositLua string
	//go:embed lua/withdraw.lua
	withdrawLua string
	//go:embed lua/bet.lua
	betLua string
	//go:embed lua/choose.lua
	chooseLua string
	//go:embed lua/settle.lua
	settleLua string
	//go:embed lua/limits.lua
	limitsLua string

	depositScript  = redis.NewScript(prelude + depositLua)
	withdrawScript = redis.NewScript(prelude + withdrawLua)
	betScript      = redis.NewScript(prelude + showBalanceLua + betLua)
	chooseScript   = redis.NewScript(prelude + chooseLua)
	settleScript   = redis.NewScript(prelude + settleLua)
	limitsScript   = redis.NewScript(prelude + limitsLua)
)

// Store is the Redis-backed wallet. It is safe for concurrent use; servers
// sharing one Redis share everything through it.
type Store struct {
	rdb        redis.UniversalClient
	seal       *journal.Sealer
	cfg        Config
	durability Durability       // set by CheckDurability
	Now        func() time.Time // for tests of dated limits

	// Last known journal head per player: spares a round trip; a stale one
	// only costs a retry (the scripts compare-and-set the head).
	heads sync.Map

	cold Cold // the archive, when there is one (tiers.go)

	commit groupCommit // the scripts' writes, sent together (commit.go)
}

// New returns a store over rdb with journal sealing key sealKey.
func New(rdb redis.UniversalClient, sealKey []byte, cfg Config) (*Store, error) {
	s, err := journal.NewSealer(sealKey)
	if err != nil {
		return nil, err
	}
	return &Store{rdb: rdb, seal: s, cfg: cfg, Now: time.Now}, nil
}

// Config returns the policy figures.
func (s *Store) Config() Config { return s.cfg }

// Sealer returns the journal sealer (for verification).
func (s *Store) Sealer() *journal.Sealer { return s.seal }

var playerRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidPlayer reports whether id can name a player.
func ValidPlayer(id string) bool { return playerRE.MatchString(id) }

// keys of one player, all in the slot of the tag {p:<id>}.
type keys struct{ tag, player string }

func keysOf(player string) keys      { return keys{"{p:" + player + "}", player} }
func (k keys) acct() string          { return k.tag + ":acct" }
func (k keys) limits() string        { return k.tag + ":limits" }
func (k keys) op(id string) string   { return k.tag + ":op:" + id }
func (k keys) journal() string       { return k.tag + ":journal" }
func (k keys) ledger() string        { return k.tag + ":ledger" }
func (k keys) deposits() string      { return k.tag + ":deposits" }
func (k keys) history() string       { return k.tag + ":history" }
func (k keys) open() string          { return k.tag + ":open" }
func (k keys) owner() string         { return k.tag + ":owner" }
func (k keys) fence() string         { return k.tag + ":fence" }
func (k keys) fair() string          { return k.tag + ":fair" }
func (k keys) outbox() string        { return k.tag + ":outbox" }
func (k keys) game(id string) string { return k.tag + ":game:" + id }

// The day's loss (stakes less wins) lives in the account hash beside its
// day, lossDay (UTC): the money scripts write it with the balance, and a
// new day starts from 0 (prelude.lua's lost_today).
var lossFields = []string{"lday", "lost"}

func lossDay(t time.Time) string { return t.UTC().Format("20060102") }

// lostOn is the day's loss from the values of lossFields.
func lostOn(v []any, day string) int64 {
	if len(v) < 2 || v[0] != day {
		return 0
	}
	s, _ := v[1].(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// sealed runs a journaled script: it seals the entry against the cached
// head, and reseals against the real head if another writer moved it.
// Contention on one player's head (a burst of cashier calls, two servers
// at once) is ours to absorb: it retries, with a short random pause once
// it has lost a few times, until ctx ends.
func (s *Store) sealed(ctx context.Context, player, kind string, payload any,
	run func(e journal.Entry) ([]any, error)) ([]any, error) {
	return s.sealedChain(ctx, player, []link{{kind, payload}}, func(es []journal.Entry) ([]any, error) { return run(es[0]) })
}

// link is one entry a script appends to the journal: its kind and payload.
type link struct {
	kind    string
	payload any
}

// sealedChain is sealed for a script that appends several entries, in
// order, each chained to the one before (the first to the head).
func (s *Store) sealedChain(ctx context.Context, player string, links []link,
	run func(es []journal.Entry) ([]any, error)) ([]any, error) {
	es := make([]journal.Entry, len(links))
	for attempt := 0; ; attempt++ {
		head, _ := s.heads.Load(player)
		h, _ := head.(journal.Head)
		for i, l := range links {
			e, err := s.seal.Seal(h, l.kind, l.payload)
			if err != nil {
				return nil, err
			}
			es[i], h = e, journal.Head{Hash: e.Hash, Seq: e.Seq}
		}
		reply, err := run(es)
		if err != nil {
			return nil, err
		}
		if str(reply, 0) == "err" && str(reply, 1) == "journal_moved" {
			seq, _ := strconv.ParseInt(str(reply, 3), 10, 64)
			s.heads.Store(player, journal.Head{Hash: str(reply, 2), Seq: seq})
			if attempt >= 2 {
				pause := time.Duration(rand.Int64N(int64(min(attempt, 20)) * int64(time.Millisecond)))
				select {
				case <-time.After(pause):
				case <-ctx.Done():
					return nil, fmt.Errorf("wallet: journal head still moving after %d attempts: %w", attempt+1, ctx.Err())
				}
			}
			continue
		}
		if str(reply, 0) == "ok" {
			s.heads.Store(player, h)
		}
		return reply, nil
	}
}

func journalArgs(e journal.Entry) []any {
	return []any{e.Seq, e.Prev, e.Hash, e.MAC, e.Data}
}

// replyError converts an {'err', …} reply into an *Error.
func replyError(r []any) error {
	e := &Error{Code: Code(str(r, 1))}
	switch e.Code {
	case CodeInsufficientFunds:
		e.Available = num(r, 2)
	case CodeLimit:
		e.Reason, e.Limit, e.Available = str(r, 2), num(r, 3), num(r, 4)
	case CodeRateLimited:
		e.Reason, e.Retry = str(r, 2), time.Duration(num(r, 3))*time.Millisecond
	case CodeExclusion:
		e.Limit = num(r, 2)
	case CodeBadRequest, CodeBadAmount, CodeAlreadyChosen:
		e.Reason = str(r, 2)
	}
	return e
}

func str(r []any, i int) string {
	if i < len(r) {
		switch v := r[i].(type) {
		case string:
			return v
		case int64:
			return strconv.FormatInt(v, 10)
		}
	}
	return ""
}

func num(r []any, i int) int64 {
	n, _ := strconv.ParseInt(str(r, i), 10, 64)
	return n
}

func (s *Store) nowMS() int64 { return s.Now().UnixMilli() }

func checkArgs(player, opID string, amount int64) error {
	if !ValidPlayer(player) {
		return ErrBadPlayer
	}
	if amount <= 0 || amount > MaxAmount {
		return ErrBadAmount
	}
	if opID == "" || len(opID) > 128 {
		return ErrBadOp
	}
	return nil
}

// Movement is the journal payload of a deposit or withdrawal.
type Movement struct {
	Player string `json:"player"`
	Op     string `json:"op"`
	Amount int64  `json:"amount"`
	At     int64  `json:"at"`
}

// Moved is the answer to a deposit or withdrawal.
type Moved struct {
	Balance int64 // after the operation (for a replay: as the first time)
	Replay  bool  // the operation id was seen before: this is the first answer again
}

// Deposit credits amount cents, within the weekly deposit cap; refused to
// a self-excluded player. A retried opID returns the first answer and moves
// nothing; the same opID with another amount or direction is ErrOpConflict.
func (s *Store) Deposit(ctx context.Context, player, opID string, amount int64) (Moved, error) {
	return s.move(ctx, "deposit", player, opID, amount)
}

// Withdraw debits amount cents; refused whole if the balance is short.
// Idempotent by opID like Deposit.
func (s *Store) Withdraw(ctx context.Context, player, opID string, amount int64) (Moved, error) {
	return s.move(ctx, "withdraw", player, opID, amount)
}

// move runs a deposit or withdrawal script. The operation's record holds
// what was asked (direction and amount) beside the answer, so that a reuse
// of the id for something else is told apart from a retry. It has no
// expiry: an operation id is unique for the account's whole life.
func (s *Store) move(ctx context.Context, kind, player, opID string, amount int64) (Moved, error) {
	if err := checkArgs(player, opID, amount); err != nil {
		return Moved{}, err
	}
	k := keysOf(player)
	now := s.nowMS()
	reply, err := s.sealed(ctx, player, kind, Movement{player, opID, amount, now}, func(e journal.Entry) ([]any, error) {
		if kind == "deposit" {
			args := append([]any{amount, now, s.cfg.DefaultDepositCap, (7 * 24 * time.Hour).Milliseconds()}, journalArgs(e)...)
			return s.run(ctx, depositScript, []string{k.acct(), k.limits(), k.op(opID), k.journal(), k.deposits()}, args...)
		}
		args := append([]any{amount, now}, journalArgs(e)...)
		return s.run(ctx, withdrawScript, []string{k.acct(), k.op(opID), k.journal()}, args...)
	})
	if err != nil {
		return Moved{}, err
	}
	switch str(reply, 0) {
	case "ok":
		return Moved{Balance: num(reply, 1)}, nil
	case "dup":
		return Moved{Balance: num(reply, 1), Replay: true}, nil
	}
	return Moved{}, replyError(reply)
}

// Account is a player's money as stored. In seamless mode the money lives
// at the operator: Balance then follows the games alone (−House, as no
// deposit reaches Redis), and OperatorBalance is the operator's last answer,
// the one shown to the player.
type Account struct {
	Balance         int64 `json:"balance"`
	House           int64 `json:"house"` // house's net take from this player
	Deposited       int64 `json:"deposited"`
	Withdrawn       int64 `json:"withdrawn"`
	Seamless        bool  `json:"seamless,omitempty"`
	OperatorBalance int64 `json:"operator_balance,omitempty"`
}

// Shown is the balance the player sees: the operator's in seamless mode.
func (a Account) Shown() int64 {
	if a.Seamless {
		return a.OperatorBalance
	}
	return a.Balance
}

// Balanced reports whether the player's books hold.
func (a Account) Balanced() bool { return a.Balance+a.House == a.Deposited-a.Withdrawn }

// Account reads a player's account.
func (s *Store) Account(ctx context.Context, player string) (Account, error) {
	if !ValidPlayer(player) {
		return Account{}, ErrBadPlayer
	}
	return readAccount(ctx, s.rdb, keysOf(player).acct())
}

func readAccount(ctx context.Context, c redis.Cmdable, key string) (Account, error) {
	v, err := c.HMGet(ctx, key, accountFields...).Result()
	if err != nil {
		return Account{}, err
	}
	return parseAccount(v), nil
}

var accountFields = []string{"balance", "house", "deposited", "withdrawn", "seamless", "op_balance"}

// parseAccount reads the values of accountFields (or of its first four).
func parseAccount(v []any) Account {
	n := func(i int) int64 {
		if i >= len(v) {
			return 0
		}
		s, _ := v[i].(string)
		x, _ := strconv.ParseInt(s, 10, 64)
		return x
	}
	return Account{Balance: n(0), House: n(1), Deposited: n(2), Withdrawn: n(3), Seamless: n(4) == 1, OperatorBalance: n(5)}
}

// Standing reads a player's account and limits in one round trip (their
// keys share the player's hash slot): what a ticket summary shows.
func (s *Store) Standing(ctx context.Context, player string) (Account, Limits, error) {
	if !ValidPlayer(player) {
		return Account{}, Limits{}, ErrBadPlayer
	}
	k := keysOf(player)
	pipe := s.rdb.Pipeline()
	acct := pipe.HMGet(ctx, k.acct(), accountFields...)
	limits := s.queueLimits(ctx, pipe, k)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Account{}, Limits{}, err
	}
	return parseAccount(acct.Val()), limits(), nil
}

// StakeStanding is what a ticket summary weighs a stake against: the
// balance and the limits on staking, as in force now.
type StakeStanding struct {
	Balance       int64
	LossLimit     int64 // −1: none
	LostToday     int64
	ExcludedUntil int64 // ms since epoch
}

// standingFields are the account fields StakeStanding reads: the
// account's, then the day's loss.
var standingFields = append(append([]string{}, accountFields...), lossFields...)

// stakeFields are the limits fields StakeStanding reads.
var stakeFields = []string{"loss_limit", "loss_limit_pending", "loss_limit_pending_at", "excluded_until"}

// StakeStanding reads only what a ticket summary needs (not the deposits
// of the week nor every limit: a ticket is built far more often than
// limits are shown), with the next batch of money scripts: a ticket's
// summary takes no Redis turn of its own.
func (s *Store) StakeStanding(ctx context.Context, player string) (StakeStanding, error) {
	if !ValidPlayer(player) {
		return StakeStanding{}, ErrBadPlayer
	}
	k := keysOf(player)
	now := s.Now()
	var acct, lim *redis.SliceCmd
	if err := s.together(ctx, func(pipe redis.Pipeliner) {
		acct = pipe.HMGet(ctx, k.acct(), standingFields...)
		lim = pipe.HMGet(ctx, k.limits(), stakeFields...)
	}); err != nil {
		return StakeStanding{}, err
	}
	for _, c := range []*redis.SliceCmd{acct, lim} {
		if err := c.Err(); err != nil {
			return StakeStanding{}, err
		}
	}
	m := map[string]string{}
	for i, v := range lim.Val() {
		if v, ok := v.(string); ok {
			m[stakeFields[i]] = v
		}
	}
	a := acct.Val()
	l := s.parseLimits(now, m, lostOn(a[min(len(a), len(accountFields)):], lossDay(now)), nil)
	return StakeStanding{Balance: parseAccount(a).Shown(), LossLimit: l.LossLimit, LostToday: l.LostToday, ExcludedUntil: l.ExcludedUntil}, nil
}

// Limits are a player's responsible-gaming settings as in force now.
type Limits struct {
	DepositCap        int64 `json:"deposit_cap"`
	DepositCapPending int64 `json:"deposit_cap_pending,omitempty"`
	DepositCapAt      int64 `json:"deposit_cap_pending_at,omitempty"`
	LossLimit         int64 `json:"loss_limit"` // −1: none
	LossLimitPending  int64 `json:"loss_limit_pending,omitempty"`
	LossLimitAt       int64 `json:"loss_limit_pending_at,omitempty"`
	ExcludedUntil     int64 `json:"excluded_until,omitempty"` // ms since epoch
	LostToday         int64 `json:"lost_today"`
	DepositedWeek     int64 `json:"deposited_week"`
}

// Self-exclusion lasts from ExclusionMin to ExclusionMax; a requested end
// may be off by exclusionSlack (the client's clock, the time on the wire).
const (
	ExclusionMin   = 24 * time.Hour
	ExclusionMax   = 365 * 24 * time.Hour
	exclusionSlack = 10 * time.Minute
)

// SetLimit changes one limit: kind is deposit_cap, loss_limit (cents, at
// most MaxAmount) or excluded_until (ms since epoch, 1 day to 12 months
// ahead; refused with ErrExclusion while one is in force). It returns
// whether the change applies now or at a later time (ms).
func (s *Store) SetLimit(ctx context.Context, player, kind string, value int64) (now bool, at int64, err error) {
	return s.SetLimitBy(ctx, player, kind, value, "player")
}

// SetLimitBy is SetLimit on behalf of by ("player", or "operator" for the
// console's actions), which the sealed journal entry names.
func (s *Store) SetLimitBy(ctx context.Context, player, kind string, value int64, by string) (now bool, at int64, err error) {
	if !ValidPlayer(player) {
		return false, 0, ErrBadPlayer
	}
	if value < 0 || (kind != "excluded_until" && value > MaxAmount) {
		return false, 0, ErrBadAmount
	}
	t := s.Now()
	k := keysOf(player)
	payload := struct {
		Kind  string `json:"limit"`
		Value int64  `json:"value"`
		By    string `json:"by"`
	}{kind, value, by}
	reply, err := s.sealed(ctx, player, "limit", payload, func(e journal.Entry) ([]any, error) {
		args := append([]any{t.UnixMilli(), s.cfg.DefaultDepositCap, s.cfg.RaiseDelay.Milliseconds(), kind, value,
			t.Add(ExclusionMin - exclusionSlack).UnixMilli(), t.Add(ExclusionMax + exclusionSlack).UnixMilli()}, journalArgs(e)...)
		return s.run(ctx, limitsScript, []string{k.limits(), k.acct(), k.journal()}, args...)
	})
	if err != nil {
		return false, 0, err
	}
	if r := str(reply, 0); r != "ok" && r != "dup" {
		return false, 0, replyError(reply)
	}
	return str(reply, 1) == "now", num(reply, 2), nil
}

// Limits reads the limits in force and today's and this week's usage.
func (s *Store) Limits(ctx context.Context, player string) (Limits, error) {
	if !ValidPlayer(player) {
		return Limits{}, ErrBadPlayer
	}
	pipe := s.rdb.Pipeline()
	limits := s.queueLimits(ctx, pipe, keysOf(player))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Limits{}, err
	}
	return limits(), nil
}

// queueLimits queues the reads of a player's limits on pipe; the function
// it returns makes them Limits once the pipeline has run.
func (s *Store) queueLimits(ctx context.Context, pipe redis.Pipeliner, k keys) func() Limits {
	now := s.Now()
	l := pipe.HGetAll(ctx, k.limits())
	lost := pipe.HMGet(ctx, k.acct(), lossFields...)
	deps := pipe.ZRangeByScore(ctx, k.deposits(), &redis.ZRangeBy{Min: strconv.FormatInt(now.Add(-7*24*time.Hour).UnixMilli(), 10), Max: "+inf"})
	return func() Limits {
		return s.parseLimits(now, l.Val(), lostOn(lost.Val(), lossDay(now)), deps.Val())
	}
}

func (s *Store) parseLimits(now time.Time, m map[string]string, lostToday int64, deposits []string) Limits {
	get := func(f string, def int64) int64 {
		if v, ok := m[f]; ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
		return def
	}
	out := Limits{
		DepositCap: get("deposit_cap", s.cfg.DefaultDepositCap), DepositCapPending: get("deposit_cap_pending", 0),
		DepositCapAt: get("deposit_cap_pending_at", 0), LossLimit: get("loss_limit", -1),
		LossLimitPending: get("loss_limit_pending", 0), LossLimitAt: get("loss_limit_pending_at", 0),
		ExcludedUntil: get("excluded_until", 0),
	}
	nowMS := now.UnixMilli()
	if out.DepositCapAt != 0 && out.DepositCapAt <= nowMS {
		out.DepositCap, out.DepositCapPending, out.DepositCapAt = out.DepositCapPending, 0, 0
	}
	if out.LossLimitAt != 0 && out.LossLimitAt <= nowMS {
		out.LossLimit, out.LossLimitPending, out.LossLimitAt = out.LossLimitPending, 0, 0
	}
	out.LostToday = lostToday
	for _, m := range deposits {
		if i := strings.LastIndexByte(m, ':'); i >= 0 {
			n, _ := strconv.ParseInt(m[i+1:], 10, 64)
			out.DepositedWeek += n
		}
	}
	return out
}

// Blocked reports whether the operator blocked the player (no login, no
// play, until unblocked).
func (s *Store) Blocked(ctx context.Context, player string) (bool, error) {
	n, err := s.rdb.HExists(ctx, keysOf(player).limits(), "blocked").Result()
	return n, err
}

// SetBlocked blocks (with the operator's reason) or unblocks a player.
func (s *Store) SetBlocked(ctx context.Context, player, reason string, on bool) error {
	if !ValidPlayer(player) {
		return ErrBadPlayer
	}
	k := keysOf(player).limits()
	if !on {
		return s.rdb.HDel(ctx, k, "blocked").Err()
	}
	return s.durably(ctx, k, func(p redis.Pipeliner) { p.HSet(ctx, k, "blocked", reason) })
}

func revokedKey(sid string) string { return "keno:revoked:" + sid }

// Revoke refuses the token session sid until until (when it would have
// expired anyway).
func (s *Store) Revoke(ctx context.Context, sid string, until time.Time) error {
	if sid == "" || len(sid) > 128 {
		return &Error{Code: CodeBadRequest, Reason: "a session id is 1 to 128 characters"}
	}
	return s.durably(ctx, revokedKey(sid), func(p redis.Pipeliner) { p.Set(ctx, revokedKey(sid), "1", time.Until(until)) })
}

// Revoked reports whether the operator revoked session sid.
func (s *Store) Revoked(ctx context.Context, sid string) (bool, error) {
	n, err := s.rdb.Exists(ctx, revokedKey(sid)).Result()
	return n > 0, err
}
