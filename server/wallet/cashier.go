package wallet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The operator's cashier names each deposit or withdrawal with an op id of
// its own, unique across every player: the same id for another player,
// direction or amount is a conflict, not a new operation. The id is first
// claimed in a key of its own (outside any player's slot, so it is checked
// before the player's money script, not inside it), with what it asks for;
// the money script, idempotent by the same id, then moves the money; the
// claim finally records the answer. A crash between the steps is undone by
// the caller's retry: the claim matches, the script answers "dup" if it
// had run. Neither record expires: an op id is never reused.

func cashierKey(op string) string { return "keno:cashier:op:" + op }

// CashierOpMax is the longest op id the cashier takes.
const CashierOpMax = 64

// ErrBadCashierOp: a cashier op id missing or too long.
var ErrBadCashierOp = &Error{Code: CodeBadRequest, Reason: fmt.Sprintf("cashier op id must be 1–%d characters", CashierOpMax)}

// Cashier performs the operator's deposit (kind "deposit") or withdrawal
// ("withdraw") named op. A replay returns the first answer with Replay set;
// a conflicting reuse of op is ErrOpConflict and moves nothing.
func (s *Store) Cashier(ctx context.Context, kind, player, op string, amount int64) (Moved, error) {
	if kind != "deposit" && kind != "withdraw" {
		return Moved{}, &Error{Code: CodeBadRequest, Reason: "unknown cashier operation " + strconv.Quote(kind)}
	}
	if op == "" || len(op) > CashierOpMax {
		return Moved{}, ErrBadCashierOp
	}
	if err := checkArgs(player, op, amount); err != nil {
		return Moved{}, err
	}
	asked := kind + "|" + player + "|" + strconv.FormatInt(amount, 10)
	key := cashierKey(op)
	var claim *redis.BoolCmd
	if err := s.durably(ctx, key, func(p redis.Pipeliner) { claim = p.SetNX(ctx, key, asked, 0) }); err != nil {
		return Moved{}, err
	}
	claimed, err := claim.Result()
	if err != nil {
		return Moved{}, err
	}
	if !claimed {
		prior, err := s.rdb.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			return Moved{}, errors.New("wallet: cashier op record vanished between two reads; retry")
		}
		if err != nil {
			return Moved{}, err
		}
		what, answer, done := strings.Cut(prior, "=")
		if what != asked {
			return Moved{}, ErrOpConflict
		}
		if done {
			bal, _ := strconv.ParseInt(answer, 10, 64)
			return Moved{Balance: bal, Replay: true}, nil
		}
	}
	m, err := s.move(ctx, kind, player, "ops-"+op, amount)
	if err != nil {
		return m, err // a refusal is not recorded: the same op may be tried again
	}
	answer := asked + "=" + strconv.FormatInt(m.Balance, 10)
	if err := s.durably(ctx, key, func(p redis.Pipeliner) { p.Set(ctx, key, answer, 0) }); err != nil {
		return m, err
	}
	return m, nil
}
