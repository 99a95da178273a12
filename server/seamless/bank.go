// Package seamless plays the games' money through the operator's wallet
// (WALLET=seamless, protocol/OPERATOR.md): a ticket is debited there before
// its bet is recorded in Redis, every settlement is credited there, and
// every call that may have been lost is made again, or undone, until the
// operator acknowledges it — from the outbox Redis keeps per player
// (wallet/outbox.go), so that no server crash loses one.
package seamless

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/rs/zerolog"

	"keno/engine"
	"keno/server/operator"
	"keno/server/wallet"
)

// Bank is the seamless wallet, as the sessions and the sweeper use it.
type Bank struct {
	store *wallet.Store
	op    *operator.Client
	log   zerolog.Logger
	// InFlight: how long a debit may stay unanswered before any server
	// may roll it back (well past the client's timeout and the bet's
	// own retries).
	InFlight time.Duration
}

// New returns a bank over the store and the operator's client.
func New(store *wallet.Store, op *operator.Client, inFlight time.Duration, log zerolog.Logger) *Bank {
	return &Bank{store: store, op: op, log: log, InFlight: inFlight}
}

// LiveInFlight: how much longer than its time a debit in flight is left
// to the session that plays its player (Owed).
const LiveInFlight = 10 * time.Minute

// Errors told to the player (through wallet.Error's codes).
var (
	// ErrUnavailable: the debit's answer was lost; it is rolled back and
	// the ticket refused. Its recovery entries stay until the sweep finds
	// the outbox empty.
	ErrUnavailable = &wallet.Error{Code: wallet.CodeWalletUnavailable}
)

// Prepare writes the recovery entries of a ticket's games, due at until
// — before the debit, so that whatever happens after it the outbox is
// found (wallet/outbox.go) — and then the debit's intent, while the
// ticket's summary is shown, so that the confirmation sends the debit at
// once: two durable writes less on the way to the bet. No server rolls the
// intent back before until + InFlight, so a debit sent before until has
// all of InFlight to be answered and its bet to land. An intent whose
// ticket is never confirmed is forgotten (Forget), or, should its server
// die first, rolled back by the sweep (a rollback of a debit never sent:
// the contract answers it, and moves nothing).
func (b *Bank) Prepare(ctx context.Context, player, ticket string, games []string, total int64, until time.Time) error {
	if err := b.store.Recovery().Reserve(ctx, player, games, until); err != nil {
		return err
	}
	return b.store.Outbox().Intend(ctx, player, ticket, total, until.Add(b.InFlight))
}

// Forget drops the intent of a ticket whose debit was never sent, then its
// recovery entries; should the first fail, the entries stay: they are what
// leads the sweep to the intent.
func (b *Bank) Forget(ctx context.Context, player, ticket string, games []string) error {
	if err := b.store.Outbox().Drop(ctx, player, ticket); err != nil {
		return err
	}
	due := make([]wallet.DueGame, len(games))
	for i, id := range games {
		due[i] = wallet.DueGame{Player: player, GameID: id}
	}
	return b.store.Recovery().Abandon(ctx, due...)
}

// PlaceBet debits the ticket at the operator and records the bet: the
// debit's intent is written first, after the games' recovery entries
// (unless Prepare wrote both and t.Intended has not passed), then the
// debit is sent, then the bet takes the intent out (bet.lua). A refused
// bet's debit is rolled back; a debit whose answer is lost too. A ticket
// dealt again (wallet.FairMoved) keeps its debit: the retry sends the same
// transaction, which the operator answers as the first time.
func (b *Bank) PlaceBet(ctx context.Context, player, fence string, t wallet.Ticket) (int64, bool, error) {
	out := b.store.Outbox()
	if !time.Now().Before(t.Intended) {
		// No intent in force (it lapsed, or none was prepared): the
		// recovery entries, then the intent, are written now.
		err := b.store.Recovery().Reserve(ctx, player, t.GameIDs(), cmp.Or(t.Due, time.Now()))
		if err == nil {
			err = out.Intend(ctx, player, t.ID, t.Total(), time.Now().Add(b.InFlight))
		}
		if errors.Is(err, wallet.ErrRolledBack) {
			return 0, false, errors.Join(ErrUnavailable, wallet.ErrSpent)
		} else if err != nil {
			return 0, false, err
		}
	}
	sent := time.Now().UnixMilli()
	bal, err := b.op.Debit(ctx, operator.DebitCall{Player: player, Tx: wallet.DebitTx(t.ID), Round: t.ID, Amount: t.Total()})
	var refused *operator.Refused
	switch {
	case errors.As(err, &refused):
		// It moved nothing: nothing to undo. Its tx is spent all the same
		// (the operator answers it the same way for ever).
		if err := out.Drop(ctx, player, t.ID); err != nil {
			b.log.Warn().Err(err).Str("player", player).Msg("drop a refused debit's intent (the sweep rolls it back instead)")
		}
		return 0, false, errors.Join(b.refusal(ctx, player, refused), wallet.ErrSpent)
	case err != nil:
		b.rollBack(ctx, player, t.ID)
		return 0, false, errors.Join(ErrUnavailable, wallet.ErrSpent)
	}
	t.Paid = &wallet.Paid{Balance: bal, SentAt: sent}
	t.Due = time.Time{} // the recovery entries were written before the debit
	_, dup, err := b.store.PlaceBet(ctx, player, fence, t)
	var we *wallet.Error
	var moved *wallet.FairMoved
	switch {
	case err == nil:
		return bal, dup, nil
	case errors.As(err, &moved):
		return 0, false, err // dealt again and retried: the debit stands
	case errors.Is(err, wallet.ErrRolledBack):
		// Too late: another server rolled the debit back meanwhile.
		return 0, false, errors.Join(ErrUnavailable, wallet.ErrSpent)
	case errors.As(err, &we):
		b.rollBack(ctx, player, t.ID)
		return 0, false, errors.Join(err, wallet.ErrSpent)
	}
	// Unanswered: the bet may have landed. If it did not, the intent
	// falls due and the sweep rolls the debit back.
	return 0, false, err
}

// refusal explains an operator's refusal of a debit as a wallet error.
func (b *Bank) refusal(ctx context.Context, player string, r *operator.Refused) error {
	switch r.Code {
	case "insufficient_funds":
		bal, ok := b.Balance(ctx, player)
		if a, err := b.store.Account(ctx, player); !ok && err == nil {
			bal = a.OperatorBalance // the last known
		}
		return &wallet.Error{Code: wallet.CodeInsufficientFunds, Available: bal}
	case "player_blocked":
		return &wallet.Error{Code: wallet.CodePlayerBlocked, Reason: r.Message}
	case "limit_reached":
		return &wallet.Error{Code: wallet.CodeLimit, Reason: "operator", Limit: -1}
	}
	b.log.Error().Str("player", player).Str("code", r.Code).Str("message", r.Message).Msg("the operator refused a debit with a code outside the contract")
	return &wallet.Error{Code: wallet.CodeWalletRefused, Reason: r.Code}
}

// rollBack turns a ticket's in-flight debit into a rollback and sends it
// once now; if that fails, the outbox keeps it for the sweep.
func (b *Bank) rollBack(ctx context.Context, player, ticket string) {
	ctx = context.WithoutCancel(ctx)
	c, owed, err := b.store.Outbox().RollBack(ctx, player, ticket)
	if err != nil {
		b.log.Warn().Err(err).Str("player", player).Msg("queue a rollback (the sweep does it once the debit is due)")
		return
	}
	if owed {
		b.send(ctx, c)
	}
}

// Settle pays a game: the settlement and its credit's outbox entry are
// written at once, then the credit is sent. The balance answered is the
// operator's; if the credit is not acknowledged yet, the last known one
// plus the win (the outbox sends the credit until it is).
func (b *Bank) Settle(ctx context.Context, player, fence string, g *wallet.GameRecord, last *wallet.Choice, res engine.Result) (wallet.Settlement, error) {
	st, c, err := b.store.SettleCrediting(ctx, player, fence, g, last, res)
	if err != nil {
		return st, err
	}
	if !st.Dup {
		if bal, ok := b.send(ctx, c); ok {
			st.Balance = bal
			return st, nil
		}
		st.Pending = true
	} else {
		// Settled before: its credit is acknowledged, or still owed.
		owed, err := b.Owed(ctx, player, true) // its caller plays the player
		if err != nil {
			return st, err
		}
		st.Pending = owed > 0
	}
	a, err := b.store.Account(ctx, player)
	if err != nil {
		return st, err
	}
	st.Balance = a.OperatorBalance
	if st.Pending && !st.Dup {
		st.Balance += res.Win // shown as it will be once the credit lands
	}
	return st, nil
}

// Balance reads the player's balance at the operator and shows it.
func (b *Bank) Balance(ctx context.Context, player string) (int64, bool) {
	sent := time.Now().UnixMilli()
	bal, err := b.op.Balance(ctx, player)
	if err != nil {
		b.log.Warn().Err(err).Str("player", player).Msg("read the operator's balance (the last known is shown)")
		return 0, false
	}
	if err := b.store.Outbox().ShowBalance(ctx, player, bal, sent); err != nil {
		b.log.Warn().Err(err).Msg("record the operator's balance")
	}
	return bal, true
}

// Owed sends every call of the player's outbox that is due — rolling back
// debits left in flight past their time — and returns how many are still
// owed (not due yet, or failed again). While a session plays the player
// (live), its debits in flight are its own to play or roll back — one may
// be a ticket whose summary is still on screen (Prepare) — and are rolled
// back only once LiveInFlight past their time: the orphans of a server
// that died while its player came back elsewhere.
func (b *Bank) Owed(ctx context.Context, player string, live bool) (int, error) {
	calls, err := b.store.Outbox().Pending(ctx, player)
	if err != nil {
		return 0, err
	}
	now := time.Now().UnixMilli()
	owed := 0
	for _, c := range calls {
		due := c.Due
		if live && c.Kind == wallet.KindDebit {
			due += LiveInFlight.Milliseconds()
		}
		if due > now {
			owed++
			continue
		}
		if c.Kind == wallet.KindDebit {
			var ok bool
			if c, ok, err = b.store.Outbox().RollBack(ctx, player, c.Round); err != nil {
				return owed + 1, err
			} else if !ok {
				continue // the bet landed meanwhile
			}
		}
		if _, ok := b.send(ctx, c); !ok {
			owed++
		}
	}
	return owed, nil
}

// send makes one attempt at an owed call; acknowledged, it leaves the
// outbox, otherwise it is put off (exponential backoff, 1 s to 5 min). It
// returns the balance answered, and whether nothing of the call is owed
// any more (a retried call's read of the balance included).
func (b *Bank) send(ctx context.Context, c wallet.Call) (int64, bool) {
	var (
		bal int64
		err error
	)
	sent := time.Now().UnixMilli()
	switch c.Kind {
	case wallet.KindCredit:
		bal, err = b.op.Credit(ctx, operator.CreditCall{Player: c.Player, Tx: c.Tx, Round: c.Round, Amount: c.Amount, DebitTx: c.DebitTx})
	case wallet.KindRollback:
		bal, err = b.op.Rollback(ctx, operator.RollbackCall{Player: c.Player, Tx: c.Tx, Round: c.Round, DebitTx: c.DebitTx})
	case wallet.KindBalance:
		bal, err = b.op.Balance(ctx, c.Player)
	default:
		return 0, false
	}
	if err == nil {
		read, owed, err := b.store.Outbox().Ack(ctx, c, bal, sent)
		if err != nil {
			// Sent again later: the operator answers as the first time.
			b.log.Warn().Err(err).Str("tx", c.Tx).Msg("record an acknowledged call")
		}
		if owed {
			// A retried call's answer may be its first again: the balance
			// is read now, or stays owed.
			return b.send(ctx, read)
		}
		return bal, true
	}
	c.Tries++
	c.Last = err.Error()
	backoff := min(5*time.Minute, time.Second<<min(c.Tries-1, 9))
	c.Due = time.Now().Add(backoff/2 + rand.N(backoff/2+1)).UnixMilli()
	lvl := b.log.Warn()
	var refused *operator.Refused
	if errors.As(err, &refused) {
		lvl = b.log.Error() // outside the contract: a credit or rollback must be accepted
	}
	lvl.Err(err).Str("player", c.Player).Str("tx", c.Tx).Int("tries", c.Tries).Msg("operator call failed; retried later")
	if err := b.store.Outbox().Retry(context.WithoutCancel(ctx), c); err != nil {
		b.log.Warn().Err(err).Str("tx", c.Tx).Msg("record a failed call")
	}
	return 0, false
}
