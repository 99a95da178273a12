package app

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/rs/zerolog"

	"keno/server/wallet"
)

// The console's API: player lookup (viewer) and the operator's actions —
// kick, block and unblock, lower a limit, exclude, maintenance, broadcast.
// Every action is audited with the operator's role and request id; the
// ones that touch limits go through the wallet's own limit script.

type roleKey struct{}

func withRole(ctx context.Context, role string) context.Context {
	return context.WithValue(ctx, roleKey{}, role)
}

func roleOf(r *http.Request) string { s, _ := r.Context().Value(roleKey{}).(string); return s }

// audit writes the line every operator action leaves.
func audit(r *http.Request, action string, err error) *zerolog.Event {
	ev := reqLog(r).Info()
	if err != nil {
		ev = reqLog(r).Warn().Err(err)
	}
	return ev.Str("audit", action).Str("role", roleOf(r)).Str("remote", r.RemoteAddr)
}

// decode reads a strict JSON body into v.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := jsonv2.UnmarshalRead(http.MaxBytesReader(w, r.Body, 4096), v, jsonv2.RejectUnknownMembers(true)); err != nil {
		fail(w, http.StatusBadRequest, "bad_request", "the body must be one JSON object of the documented fields: "+err.Error())
		return false
	}
	return true
}

// PlayerView is what the console shows of a player.
type PlayerView struct {
	Player   string              `json:"player"`
	Account  wallet.Account      `json:"account"`
	Limits   wallet.Limits       `json:"limits"`
	Blocked  bool                `json:"blocked"`
	Online   bool                `json:"online_here"`
	Open     []*wallet.GameState `json:"open_games"`
	Last     []*wallet.GameState `json:"last_games"`
	Journal  string              `json:"journal"` // intact, or the first problem
	Problems int                 `json:"journal_problems"`
}

// GET /api/ops/players/{player}
func (a *App) opsPlayer(w http.ResponseWriter, r *http.Request) {
	p := r.PathValue("player")
	if !wallet.ValidPlayer(p) {
		fail(w, http.StatusBadRequest, "bad_request", "bad player id")
		return
	}
	ctx := r.Context()
	v := PlayerView{Player: p}
	var err error
	v.Account, v.Limits, err = a.Store.Standing(ctx, p)
	if err == nil {
		v.Blocked, err = a.Store.Blocked(ctx, p)
	}
	if err == nil {
		v.Open, err = a.Store.OpenGames(ctx, p)
	}
	if err == nil {
		v.Last, err = a.Store.History(ctx, p, 0, 10)
	}
	if err != nil {
		reqLog(r).Error().Err(err).Str("player", p).Msg("ops: player lookup")
		fail(w, http.StatusServiceUnavailable, "unavailable", "the wallet could not be read; try again")
		return
	}
	if v.Account == (wallet.Account{}) && len(v.Last) == 0 {
		fail(w, http.StatusNotFound, "no_such_player", "no player of that id")
		return
	}
	rep, err := a.Store.VerifyPlayer(ctx, p)
	switch {
	case err != nil:
		v.Journal = "could not be checked: " + err.Error()
	case len(rep.Problems) == 0:
		v.Journal = "intact"
	default:
		v.Journal, v.Problems = rep.Problems[0].String(), len(rep.Problems)
	}
	v.Online = a.Hub.Connected(p)
	audit(r, "player_lookup", nil).Str("player", p).Msg("ops: player lookup")
	writeJSON(w, http.StatusOK, v)
}

// POST /api/ops/players/{player}/{action}: kick, block, unblock, limit, exclude
func (a *App) opsPlayerAction(w http.ResponseWriter, r *http.Request) {
	p, action := r.PathValue("player"), r.PathValue("action")
	if !wallet.ValidPlayer(p) {
		fail(w, http.StatusBadRequest, "bad_request", "bad player id")
		return
	}
	var body struct {
		Reason string `json:"reason"`
		Kind   string `json:"kind"`  // limit: deposit_cap or loss_limit
		Value  int64  `json:"value"` // limit: cents
		Days   int    `json:"days"`  // exclude
	}
	if r.ContentLength != 0 && !decode(w, r, &body) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	var err error
	switch action {
	case "kick":
		err = a.Hub.Kick(ctx, p, "kicked")
	case "block":
		if err = a.Store.SetBlocked(ctx, p, "operator: "+body.Reason, true); err == nil {
			err = a.Hub.Kick(ctx, p, "blocked")
		}
	case "unblock":
		err = a.Store.SetBlocked(ctx, p, "", false)
	case "limit":
		err = a.lowerLimit(ctx, p, body.Kind, body.Value)
	case "exclude":
		if body.Days < 1 || body.Days > 365 {
			fail(w, http.StatusBadRequest, "bad_request", "days must be 1 to 365")
			return
		}
		until := time.Now().Add(time.Duration(body.Days) * 24 * time.Hour).UnixMilli()
		if _, _, err = a.Store.SetLimitBy(ctx, p, "excluded_until", until, "operator"); err == nil {
			err = a.Hub.Kick(ctx, p, "excluded")
		}
	default:
		fail(w, http.StatusNotFound, "not_found", "actions: kick, block, unblock, limit, exclude")
		return
	}
	audit(r, "player_"+action, err).Str("player", p).Str("reason", body.Reason).Str("kind", body.Kind).Int64("value", body.Value).
		Int("days", body.Days).Msg("ops: player action")
	var we *wallet.Error
	switch {
	case errors.As(err, &we):
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Code: string(we.Code), Message: we.Error(), Reason: we.Reason, Limit: we.Limit})
	case err != nil:
		fail(w, http.StatusServiceUnavailable, "unavailable", "the action could not be done; try again")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

var errNotLower = &wallet.Error{Code: "not_a_lowering", Reason: "the operator may only lower a limit; raising one is the player's, with its delay"}

// lowerLimit applies a lower deposit cap or loss limit at once.
func (a *App) lowerLimit(ctx context.Context, p, kind string, value int64) error {
	_, lim, err := a.Store.Standing(ctx, p)
	if err != nil {
		return err
	}
	cur := map[string]int64{"deposit_cap": lim.DepositCap, "loss_limit": lim.LossLimit}
	old, ok := cur[kind]
	if !ok {
		return &wallet.Error{Code: wallet.CodeBadRequest, Reason: "kind must be deposit_cap or loss_limit"}
	}
	if old >= 0 && value >= old {
		return errNotLower
	}
	_, _, err = a.Store.SetLimitBy(ctx, p, kind, value, "operator")
	return err
}

// message reads {"message": …}: what players are told, 1 to 300 characters.
func message(w http.ResponseWriter, r *http.Request) (string, bool) {
	var body struct {
		Message string `json:"message"`
	}
	if !decode(w, r, &body) {
		return "", false
	}
	if m := strings.TrimSpace(body.Message); m != "" && len(m) <= 300 {
		return m, true
	}
	fail(w, http.StatusBadRequest, "bad_request", "message: what players are told, 1 to 300 characters")
	return "", false
}

// GET, POST, DELETE /api/ops/maintenance
func (a *App) opsMaintenance(w http.ResponseWriter, r *http.Request) {
	var err error
	switch r.Method {
	case http.MethodPost:
		msg, ok := message(w, r)
		if !ok {
			return
		}
		err = a.Hub.SetMaintenance(r.Context(), msg)
		audit(r, "maintenance_on", err).Str("message", msg).Msg("ops: maintenance")
	case http.MethodDelete:
		err = a.Hub.SetMaintenance(r.Context(), "")
		audit(r, "maintenance_off", err).Msg("ops: maintenance")
	}
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "unavailable", "Redis did not take the change; try again")
		return
	}
	msg := a.Hub.Maintenance()
	writeJSON(w, http.StatusOK, map[string]any{"maintenance": msg != "", "message": msg})
}

// POST /api/ops/broadcast
func (a *App) opsBroadcast(w http.ResponseWriter, r *http.Request) {
	msg, ok := message(w, r)
	if !ok {
		return
	}
	err := a.Hub.Broadcast(r.Context(), msg)
	audit(r, "broadcast", err).Str("message", msg).Msg("ops: broadcast")
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "unavailable", "the message could not be sent; try again")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// tokenLifeMax bounds how long a revocation is kept: no player token lives
// longer (the operator's site issues short ones; dev login 12 h).
const tokenLifeMax = 7 * 24 * time.Hour

// POST /api/ops/sessions/{sid}/revoke: the token's session ends at once,
// on every server, and the token is refused from now on.
func (a *App) opsRevoke(w http.ResponseWriter, r *http.Request) {
	sid := r.PathValue("sid")
	err := a.Hub.Revoke(r.Context(), sid, time.Now().Add(tokenLifeMax))
	audit(r, "session_revoke", err).Str("sid", sid).Msg("ops: session revoked")
	var we *wallet.Error
	switch {
	case errors.As(err, &we):
		fail(w, http.StatusBadRequest, string(we.Code), we.Reason)
	case err != nil:
		fail(w, http.StatusServiceUnavailable, "unavailable", "the revocation was not recorded; try again")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
