// Package protocol defines the Keno Mystères wire protocol: JSON text frames
// over WebSocket, one message per frame. Every client request carries a
// client-chosen "id" that the server echoes in its direct reply; messages
// the server pushes on its own (the timed reveal) carry the game id and,
// when timed, the instant "t" (Unix ms) at which they were scheduled.
// README.md beside this file is the reference.
package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
)

// Version is the protocol version of a hello that names none; Versions
// lists the ones a server accepts.
const Version = 1

// Versions the server can speak, newest first. Version 2 differs in one
// thing: a game's timed messages are sent ahead of their t, each step at
// once, and the client shows each at its t (protocol/README.md, "Pace").
var Versions = []int{2, 1}

// Ahead says whether the server sends timed messages ahead in version v.
func Ahead(v int) bool { return v >= 2 }

// MaxFrame is the largest frame a server reads; larger ones close the
// connection (a client has no reason to send more than a few hundred bytes).
const MaxFrame = 4096

// Client → server request types.
const (
	THello      = "hello"
	TTicket     = "ticket"
	TConfirm    = "confirm"
	TChoice     = "choice"
	TBox        = "box"
	TReplay     = "replay"
	TBalance    = "balance"
	THistory    = "history"
	TGame       = "game"
	TDeposit    = "deposit"
	TSetLimit   = "set_limit"
	TClientSeed = "client_seed"
	TRotateSeed = "rotate_seed"
	TPing       = "ping"
)

// Server → client message types.
const (
	TWelcome     = "welcome"
	TSummary     = "summary"
	TAccepted    = "accepted"
	TGameStart   = "game_start"
	TColor       = "color"
	TNumber      = "number"
	TMainResult  = "main_result"
	TSoCDraw     = "soc_draw"
	TSoCResult   = "soc_result"
	TExtraResult = "extra_result"
	TSettled     = "settled"
	TTicketDone  = "ticket_done"
	TResume      = "resume"
	TBalanceInfo = "balance"
	THistoryList = "history"
	TGameDetail  = "game"
	TFair        = "fair"
	TLimits      = "limits"
	TPong        = "pong"
	TOk          = "ok" // a choice (Stop-or-Continue, box) is recorded
	TError       = "error"
	TTakenOver   = "session_taken_over"
	TShutdown    = "server_shutdown"
	TNotice      = "notice" // a message from the operator to every player (text)
)

// Grid is one game of a ticket as requested: explicit picks, or a quick
// pick of QuickPick numbers.
type Grid struct {
	Picks     []int `json:"picks,omitempty"`
	QuickPick int   `json:"quick_pick,omitempty"`
	Stake     int64 `json:"stake"`
}

// Request is any client message; which fields matter depends on Type.
type Request struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Versions []int  `json:"versions,omitempty"` // hello
	Token    string `json:"token,omitempty"`    // hello
	Grids    []Grid `json:"grids,omitempty"`    // ticket
	Ticket   string `json:"ticket,omitempty"`   // confirm
	Game     string `json:"game,omitempty"`     // choice, box, replay, game
	Continue *bool  `json:"continue,omitempty"` // choice
	Box      *int   `json:"box,omitempty"`      // box
	Last     bool   `json:"last,omitempty"`     // replay the last ticket
	Before   int64  `json:"before,omitempty"`   // history cursor
	Limit    int    `json:"limit,omitempty"`    // history page size
	Amount   int64  `json:"amount,omitempty"`   // deposit, cents
	Op       string `json:"op,omitempty"`       // deposit operation id (idempotency)
	Kind     string `json:"kind,omitempty"`     // set_limit: deposit_cap, loss_limit, excluded_until
	Value    int64  `json:"value,omitempty"`    // set_limit
	Seed     string `json:"seed,omitempty"`     // client_seed
}

// Limits of a ticket.
const (
	MaxGrids = 5
	MaxID    = 64
	// MaxAmount bounds every amount and money limit a request may carry
	// (1 000 000 €): far above any real deposit, far below where integer
	// arithmetic anywhere (Lua's doubles included) could lose a cent.
	MaxAmount = 100_000_000
)

// Decode parses one frame into a request and checks its shape: known type,
// an id, the fields that type needs. It never panics on any input.
//
// Decoding is strict (the JSON v2 rules): field names match exactly (no
// "TYPE" for "type"), a name given twice, unknown fields, trailing bytes
// after the object, invalid UTF-8, and numbers that are not integers
// where integers are wanted (100.5, 1e2, "100") are all refused. Even a
// refused request's error carries its id when one can be read (IDOf).
func Decode(frame []byte) (*Request, *Error) {
	if len(frame) > MaxFrame {
		return &Request{}, Errf(CodeTooLarge, "frame of %d bytes exceeds %d", len(frame), MaxFrame)
	}
	var r Request
	if err := jsonv2.Unmarshal(frame, &r, jsonv2.RejectUnknownMembers(true)); err != nil {
		return &Request{ID: IDOf(frame)}, Errf(CodeBadRequest, "malformed request: %v", err)
	}
	if len(r.ID) > MaxID {
		return &Request{}, Errf(CodeBadRequest, "id longer than %d characters", MaxID)
	}
	if err := r.validate(); err != nil {
		return &r, err
	}
	return &r, nil
}

// IDOf reads a frame's "id" as leniently as possible, so that the error
// answering a malformed request still names the request it answers. An id
// that is not a string, or too long, is not echoed.
func IDOf(frame []byte) string {
	var v struct {
		ID string `json:"id"`
	}
	json.NewDecoder(bytes.NewReader(frame)).Decode(&v) // a partial read is fine
	if len(v.ID) > MaxID {
		return ""
	}
	return v.ID
}

func (r *Request) validate() *Error {
	if r.ID == "" && r.Type != TPing {
		return Errf(CodeBadRequest, "every request needs an id")
	}
	switch r.Type {
	case THello:
		if r.Token == "" {
			return Errf(CodeUnauthorized, "hello needs a token")
		}
	case TTicket:
		if len(r.Grids) < 1 || len(r.Grids) > MaxGrids {
			return Errf(CodeBadRequest, "a ticket has 1 to %d grids", MaxGrids)
		}
		for i, g := range r.Grids {
			if (len(g.Picks) == 0) == (g.QuickPick == 0) {
				return Errf(CodeInvalidPicks, "grid %d: give either picks or quick_pick", i+1)
			}
		}
	case TConfirm:
		if r.Ticket == "" {
			return Errf(CodeBadRequest, "confirm needs the ticket id from the summary")
		}
	case TChoice:
		if r.Game == "" || r.Continue == nil {
			return Errf(CodeBadRequest, "choice needs game and continue (true or false)")
		}
	case TBox:
		if r.Game == "" || r.Box == nil {
			return Errf(CodeBadRequest, "box needs game and box (0..4)")
		}
		if *r.Box < 0 || *r.Box > 4 {
			return Errf(CodeBadRequest, "box must be 0..4")
		}
	case TReplay:
		if r.Game == "" && !r.Last {
			return Errf(CodeBadRequest, "replay needs a game id or last: true")
		}
	case TGame:
		if r.Game == "" {
			return Errf(CodeBadRequest, "game needs a game id")
		}
	case TDeposit:
		if r.Amount <= 0 || r.Amount > MaxAmount {
			return Errf(CodeBadAmount, "amount must be a whole number of cents from 1 to %d", MaxAmount)
		}
		if r.Op == "" || len(r.Op) > MaxID {
			return Errf(CodeBadRequest, "deposit needs an op id of 1 to %d characters", MaxID)
		}
	case TSetLimit:
		switch r.Kind {
		case "deposit_cap", "loss_limit":
			if r.Value < 0 || r.Value > MaxAmount {
				return Errf(CodeBadAmount, "%s must be a whole number of cents from 0 to %d", r.Kind, MaxAmount)
			}
		case "excluded_until":
			if r.Value <= 0 {
				return Errf(CodeBadRequest, "excluded_until must be a time in Unix milliseconds")
			}
		default:
			return Errf(CodeBadRequest, "kind must be deposit_cap, loss_limit or excluded_until")
		}
	case TClientSeed:
		if len(r.Seed) == 0 || len(r.Seed) > 64 {
			return Errf(CodeBadRequest, "seed must be 1..64 characters")
		}
	case TBalance, THistory, TRotateSeed, TPing:
	default:
		return Errf(CodeUnknownType, "unknown message type %q", r.Type)
	}
	return nil
}

// Error codes.
const (
	CodeBadRequest        = "bad_request"
	CodeTooLarge          = "too_large"
	CodeUnknownType       = "unknown_type"
	CodeUnsupported       = "unsupported_version"
	CodeUnauthorized      = "unauthorized"
	CodeInvalidPicks      = "invalid_picks"
	CodeInvalidStake      = "invalid_stake"
	CodeInsufficientFunds = "insufficient_funds"
	CodeLimitReached      = "limit_reached"
	CodeRateLimited       = "rate_limited"
	CodeNotYourTurn       = "not_your_turn"
	CodeNoSuchTicket      = "no_such_ticket"
	CodeNoSuchGame        = "no_such_game"
	CodeTakenOver         = "session_taken_over"
	CodeForbidden         = "forbidden"
	CodeBadAmount         = "bad_amount"
	CodeExclusion         = "exclusion_in_force"
	CodeServerProblem     = "server_problem"
	CodeDraining          = "server_draining"
	CodeMaintenance       = "maintenance"        // the operator's maintenance: no new ticket; games in play finish
	CodeKicked            = "kicked"             // the operator ended the session (kick, block, exclusion)
	CodeBlocked           = "account_blocked"    // hello of a player the operator blocked
	CodeBusy              = "busy"               // the server keeps the games in play on time first: nothing was debited; retry after retry_ms
	CodeWalletUnavailable = "wallet_unavailable" // seamless mode: the operator's wallet did not answer the debit; it is cancelled, the ticket refused; retry after retry_ms
	CodeInternal          = "internal"
)

// Error is the body of an "error" message: a code for programs and a
// message for people, plus figures where they help (available balance,
// the limit in force).
type Error struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Reason    string `json:"reason,omitempty"`    // limit_reached: deposit_cap, loss_limit, ticket_max, self_excluded
	Limit     int64  `json:"limit,omitempty"`     // the limit in force
	Available int64  `json:"available,omitempty"` // balance, or room left under the limit
	RetryMS   int64  `json:"retry_ms,omitempty"`  // rate_limited, busy: when to try again
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errf builds an Error.
func Errf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
