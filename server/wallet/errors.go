package wallet

import (
	"fmt"
	"time"
)

// Code names a refusal. The Lua scripts answer with the same words; the
// session turns each into the player's (protocol) error.
type Code string

// Every refusal's code.
const (
	CodeInsufficientFunds Code = "insufficient_funds"
	CodeLimit             Code = "limit_reached" // Reason: deposit_cap, loss_limit, ticket_max, self_excluded, operator
	CodeRateLimited       Code = "rate_limited"
	CodeFenced            Code = "fenced" // another session owns the player now
	CodeNoGame            Code = "no_game"
	CodeSettled           Code = "settled"
	CodeAlreadyChosen     Code = "already_chosen"
	CodeOpConflict        Code = "op_conflict"        // an operation id reused for a different request
	CodeExclusion         Code = "exclusion_in_force" // a self-exclusion cannot be changed while it runs
	CodeBadRequest        Code = "bad_request"
	CodeBadAmount         Code = "bad_amount"
	CodeDamaged           Code = "record_damaged" // a stored record does not match its seal
	CodeRolledBack        Code = "rolled_back"    // seamless: the bet's debit was rolled back meanwhile
	// Seamless mode: the operator's wallet's answers.
	CodeWalletUnavailable Code = "wallet_unavailable" // the debit went unanswered: rolled back
	CodeWalletRefused     Code = "wallet_refused"     // refused with a code outside the contract
	CodePlayerBlocked     Code = "player_blocked"
)

// Error is a refusal with a machine-readable code.
type Error struct {
	Code      Code
	Reason    string        // for limit_reached: deposit_cap, loss_limit, ticket_max, self_excluded; for bad_*: what is wrong; for already_chosen: the value chosen
	Limit     int64         // the limit in force (cents, or a time in ms for self_excluded and exclusion_in_force)
	Available int64         // what could still pass: balance, or room left under the limit
	Retry     time.Duration // for rate_limited: when the next attempt may pass
}

func (e *Error) Error() string {
	switch e.Code {
	case CodeInsufficientFunds:
		return fmt.Sprintf("insufficient funds: %d cents available", e.Available)
	case CodeLimit:
		return fmt.Sprintf("limit reached: %s (limit %d, available %d)", e.Reason, e.Limit, e.Available)
	}
	if e.Reason != "" {
		return string(e.Code) + ": " + e.Reason
	}
	return string(e.Code)
}

// Is lets errors.Is match on the code alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Reason == "" || t.Reason == e.Reason)
}

// Sentinels for errors.Is.
var (
	ErrInsufficientFunds = &Error{Code: CodeInsufficientFunds}
	ErrLimit             = &Error{Code: CodeLimit}
	ErrRateLimited       = &Error{Code: CodeRateLimited}
	ErrFenced            = &Error{Code: CodeFenced}
	ErrNoGame            = &Error{Code: CodeNoGame}
	ErrSettled           = &Error{Code: CodeSettled}
	ErrAlreadyChosen     = &Error{Code: CodeAlreadyChosen}
	ErrOpConflict        = &Error{Code: CodeOpConflict} // an operation id reused for a different request
	ErrExclusion         = &Error{Code: CodeExclusion}  // a self-exclusion cannot be changed while it runs
	ErrBadPlayer         = &Error{Code: CodeBadRequest, Reason: "player id must be 1–64 letters, digits, '-' or '_'"}
	ErrBadAmount         = &Error{Code: CodeBadAmount, Reason: fmt.Sprintf("amount must be a whole number of cents from 1 to %d", MaxAmount)}
	ErrBadOp             = &Error{Code: CodeBadRequest, Reason: "operation id must be 1–128 characters"}
)
