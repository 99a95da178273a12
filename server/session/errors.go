package session

import (
	"errors"
	"fmt"
	"time"

	"keno/engine"
	"keno/protocol"
	"keno/server/wallet"
)

// failErr turns an internal error into the client's typed error.
func (s *Session) failErr(id string, err error) {
	var pe *protocol.Error
	var we *wallet.Error
	switch {
	case errors.As(err, &pe):
		s.fail(id, pe)
	case errors.As(err, &we):
		if we.Code == wallet.CodeDamaged {
			s.log().Error().Err(err).Str("request_id", id).Msg("a stored record does not match its seal: run keno-server verify")
		}
		e := walletError(we)
		if e.Code == protocol.CodeTakenOver {
			s.takenOver()
			return
		}
		s.hub.metrics.Refusals.WithLabelValues(e.Code, e.Reason).Inc()
		s.fail(id, e)
	default:
		s.log().Error().Err(err).Str("request_id", id).Msg("request failed")
		s.fail(id, protocol.Errf(protocol.CodeInternal, "something went wrong on our side; nothing was debited twice — try again"))
	}
}

// walletError explains a wallet refusal to a player.
func walletError(we *wallet.Error) *protocol.Error {
	e := &protocol.Error{Code: string(we.Code), Reason: we.Reason, Limit: we.Limit, Available: we.Available}
	switch we.Code {
	case wallet.CodeInsufficientFunds:
		e.Message = fmt.Sprintf("Your balance (%s) is too low for this ticket. Make a deposit (within your weekly cap) or play a smaller ticket.", engine.Euros(we.Available))
	case wallet.CodeLimit:
		switch we.Reason {
		case "deposit_cap":
			e.Message = fmt.Sprintf("This deposit would pass your weekly deposit cap of %s; %s is left this week.", engine.Euros(we.Limit), engine.Euros(we.Available))
		case "loss_limit":
			e.Message = fmt.Sprintf("This ticket would pass your daily loss limit of %s; %s is left today.", engine.Euros(we.Limit), engine.Euros(we.Available))
		case "ticket_max":
			e.Message = fmt.Sprintf("A ticket may not exceed %s.", engine.Euros(we.Limit))
		case "self_excluded":
			e.Message = "You have excluded yourself from play until " + time.UnixMilli(we.Limit).UTC().Format("2006-01-02 15:04 UTC") + "."
		case "operator":
			e.Message, e.Limit = "A limit set at your operator's refuses this ticket.", 0
		default:
			e.Message = "A limit was reached."
		}
	case wallet.CodeRateLimited:
		e.Message = "Too many bets: wait a moment."
		e.RetryMS = we.Retry.Milliseconds() + 1
	case wallet.CodeWalletUnavailable, wallet.CodeWalletRefused:
		e.Code, e.Reason = protocol.CodeWalletUnavailable, ""
		e.Message = "Your operator's wallet did not answer in time: nothing was debited (any debit is being cancelled). Try again in a moment."
		e.RetryMS = 2000
	case wallet.CodePlayerBlocked:
		e.Code, e.Reason, e.Message = protocol.CodeBlocked, "", "Your operator has blocked your account: contact its customer service."
	case wallet.CodeFenced:
		e.Code, e.Message = protocol.CodeTakenOver, "This session was taken over by a newer one."
	case wallet.CodeNoGame:
		e.Code, e.Message = protocol.CodeNoSuchGame, "No such game."
	case wallet.CodeDamaged:
		e.Code, e.Message = protocol.CodeInternal, "This game's stored record failed its integrity check and cannot be shown; it has been reported to the operator."
	case wallet.CodeOpConflict:
		e.Message = "This operation id was already used for a different request; nothing was done."
	case wallet.CodeExclusion:
		e.Message = "You have excluded yourself from play until " + time.UnixMilli(we.Limit).UTC().Format("2006-01-02 15:04 UTC") +
			"; a self-exclusion can be neither shortened nor extended while it runs."
	case wallet.CodeBadAmount, wallet.CodeBadRequest:
		e.Message = "Invalid request."
		if we.Reason != "" {
			e.Message = "Invalid request: " + we.Reason + "."
		}
		e.Reason = ""
	default:
		e.Code, e.Message = protocol.CodeInternal, we.Error()
	}
	return e
}
