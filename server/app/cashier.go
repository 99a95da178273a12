package app

import (
	"context"
	"errors"
	"net/http"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"keno/server/wallet"
)

// apiError is every error body of the HTTP API: a code for programs and a
// message for people, with the figures that help where there are some.
type apiError struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Reason    string `json:"reason,omitempty"`
	Limit     int64  `json:"limit,omitempty"`
	Available int64  `json:"available,omitempty"`
}

func fail(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, apiError{Code: code, Message: message})
}

// cashierRequest is the body of POST /api/ops/deposit and /withdraw.
type cashierRequest struct {
	Player string `json:"player"`
	Amount int64  `json:"amount"`
	Op     string `json:"op"`
}

// cashier is the operator's cashier: a deposit or a withdrawal of
// {"player","amount","op"}, idempotent by op as Stripe defines it — the
// same op with the same request answers the first answer again (marked
// "replay": true and by the Idempotent-Replayed header), the same op with
// anything else is 409 op_conflict and moves nothing.
func (a *App) cashier(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.Cfg.Operator.Seamless() {
			fail(w, http.StatusConflict, "seamless_wallet", "WALLET=seamless: the money lives in the operator's wallet, which has its own cashier")
			return
		}
		var req cashierRequest
		body := http.MaxBytesReader(w, r.Body, 4096)
		if err := jsonv2.UnmarshalRead(body, &req, jsonv2.RejectUnknownMembers(true)); err != nil {
			fail(w, http.StatusBadRequest, "bad_request", "the body must be one JSON object {\"player\",\"amount\",\"op\"} with no other field: "+err.Error())
			return
		}
		if req.Op == "" || len(req.Op) > wallet.CashierOpMax {
			fail(w, http.StatusBadRequest, "missing_op", "op, the operation's idempotency id (1 to 64 characters), is required")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		moved, err := a.Store.Cashier(ctx, kind, req.Player, req.Op, req.Amount)
		log := reqLog(r).Info()
		if err != nil {
			log = reqLog(r).Warn().Err(err)
		}
		log.Str("audit", "cashier").Str("kind", kind).Str("player", req.Player).Str("op", req.Op).
			Int64("amount", req.Amount).Int64("balance", moved.Balance).Bool("replay", moved.Replay).
			Str("remote", r.RemoteAddr).Msg("cashier")
		var we *wallet.Error
		switch {
		case errors.Is(err, wallet.ErrOpConflict):
			fail(w, http.StatusConflict, "op_conflict", "this op was already used for a different request (player, amount or direction); nothing was moved")
		case errors.As(err, &we) && (we.Code == wallet.CodeBadRequest || we.Code == wallet.CodeBadAmount):
			fail(w, http.StatusBadRequest, string(we.Code), we.Reason)
		case errors.As(err, &we):
			writeJSON(w, http.StatusUnprocessableEntity, apiError{Code: string(we.Code), Message: we.Error(), Reason: we.Reason, Limit: we.Limit, Available: we.Available})
		case err != nil:
			reqLog(r).Error().Err(err).Str("op", req.Op).Msg("cashier: backend failure")
			fail(w, http.StatusServiceUnavailable, "unavailable", "the wallet could not be reached; retry with the same op")
		default:
			if moved.Replay {
				w.Header().Set("Idempotent-Replayed", "true")
			}
			writeJSON(w, http.StatusOK, map[string]any{"player": req.Player, "op": req.Op, "kind": kind,
				"amount": req.Amount, "balance": moved.Balance, "replay": moved.Replay})
		}
	}
}
