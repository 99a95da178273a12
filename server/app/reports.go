package app

import (
	"encoding/csv"
	"errors"
	"net/http"
	"strconv"
	"time"

	"keno/server/wallet"
)

// The operator's archive API (admin listener, bearer token): game recall
// for disputes, daily GGR, a player's statement, and the export of sealed
// entries. Every call is audited.

// archived wraps a handler that needs the archive: 503 without one.
func (a *App) archived(what string, h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return a.console(roleViewer, func(w http.ResponseWriter, r *http.Request) {
		audit(r, what, nil).Str("query", r.URL.RawQuery).Str("path", r.URL.Path).Msg("ops: archive read")
		if a.Archive == nil && what != "recall" {
			fail(w, http.StatusServiceUnavailable, "no_archive", "this server has no archive (ARCHIVE_URL)")
			return
		}
		err := h(w, r)
		var bad badQuery
		switch {
		case errors.As(err, &bad):
			fail(w, http.StatusBadRequest, "bad_request", string(bad))
		case errors.Is(err, wallet.ErrNoGame):
			fail(w, http.StatusNotFound, "no_such_game", "no game with this id in either tier")
		case err != nil:
			reqLog(r).Error().Err(err).Str("audit", what).Msg("ops: archive read failed")
			fail(w, http.StatusServiceUnavailable, "unavailable", "the archive did not answer; try again")
		}
	})
}

type badQuery string

func (b badQuery) Error() string { return string(b) }

// dates reads ?from=YYYY-MM-DD&to=YYYY-MM-DD (to inclusive), in UTC.
func dates(r *http.Request) (from, to time.Time, err error) {
	q := r.URL.Query()
	from, err1 := time.Parse(time.DateOnly, q.Get("from"))
	to, err2 := time.Parse(time.DateOnly, q.Get("to"))
	if err1 != nil || err2 != nil || to.Before(from) {
		return from, to, badQuery("from and to must be dates, YYYY-MM-DD, from ≤ to")
	}
	return from, to.AddDate(0, 0, 1), nil
}

// table writes rows as CSV (?format=csv) or JSON.
func table(w http.ResponseWriter, r *http.Request, name string, head []string, rows [][]string, v any) error {
	if r.URL.Query().Get("format") != "csv" {
		writeJSON(w, http.StatusOK, v)
		return nil
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	c := csv.NewWriter(w)
	c.Write(head)
	c.WriteAll(rows)
	return c.Error()
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

// GET /api/ops/reports/daily?from&to[&format=csv]
func (a *App) opsDaily(w http.ResponseWriter, r *http.Request) error {
	from, to, err := dates(r)
	if err != nil {
		return err
	}
	days, err := a.Archive.Daily(r.Context(), from, to)
	if err != nil {
		return err
	}
	rows := make([][]string, len(days))
	for i, d := range days {
		rows[i] = []string{d.Day, strconv.Itoa(d.Picks), i64(d.Stake), i64(d.Games), i64(d.Stakes), i64(d.Wins), i64(d.GGR)}
	}
	return table(w, r, "daily", []string{"day", "picks", "stake_cents", "games", "stakes_cents", "wins_cents", "ggr_cents"}, rows, days)
}

// GET /api/ops/players/{player}/statement?from&to[&format=csv]
func (a *App) opsStatement(w http.ResponseWriter, r *http.Request) error {
	player := r.PathValue("player")
	if !wallet.ValidPlayer(player) {
		return badQuery("bad player id")
	}
	from, to, err := dates(r)
	if err != nil {
		return err
	}
	st, err := a.Archive.Statement(r.Context(), player, from, to)
	if err != nil {
		return err
	}
	rows := make([][]string, len(st))
	for i, s := range st {
		rows[i] = []string{s.At.UTC().Format(time.RFC3339Nano), s.Kind, i64(s.Amount), i64(s.Balance), s.Ref}
	}
	return table(w, r, "statement-"+player, []string{"at", "kind", "amount_cents", "balance_cents", "ref"}, rows, st)
}

// GET /api/ops/export?from&to — sealed entries as JSON Lines.
func (a *App) opsExport(w http.ResponseWriter, r *http.Request) error {
	from, to, err := dates(r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="journal-`+r.URL.Query().Get("from")+`.jsonl"`)
	_, err = a.Archive.Export(r.Context(), from, to, w)
	return err
}

// GET /api/ops/games/{id}[?player=] — any game ever played, from
// whichever tier holds it, shown only if it is what was sealed.
func (a *App) opsRecall(w http.ResponseWriter, r *http.Request) error {
	id, player := r.PathValue("id"), r.URL.Query().Get("player")
	if player == "" && a.Archive != nil {
		p, fields, err := a.Archive.Recall(r.Context(), id)
		if err == nil {
			g, err := a.Store.ParseGame(id, fields)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, map[string]any{"player": p, "game": g})
			return nil
		}
		if !errors.Is(err, wallet.ErrNoGame) {
			return err
		}
	}
	if player == "" {
		return badQuery("player is needed to find a game that is not archived")
	}
	if !wallet.ValidPlayer(player) {
		return badQuery("bad player id")
	}
	g, err := a.Store.Game(r.Context(), player, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"player": player, "game": g})
	return nil
}
