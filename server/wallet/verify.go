package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"keno/server/journal"
)

// Verify holds everything the store keeps about each player to the sealed
// journal, which prevails (the rules, §13.9):
//   - the journal itself: every entry's hash, seal, order and sequence;
//   - its tail: the account's head (jseq, jhead), written in the same
//     script as each entry, must be the journal's last entry, so deleting
//     the newest entries, or the whole journal, is seen;
//   - the account: balance, house take, deposits and withdrawals must be
//     what the journal's entries add up to;
//   - every stored game record: the record, the choices and the settlement
//     must be the sealed ones, byte for byte, and carry valid seal tags; an
//     open game's record, or a settled one within the history window, must
//     exist; a stored game with no sealed bet is a forgery.
//
// It returns how many players were checked and the report of each damaged
// one, sorted by player.
func (s *Store) Verify(ctx context.Context) (checked int, damaged []JournalReport, err error) {
	players := map[string][]string{} // player → stored game ids
	err = scanKeys(ctx, s.rdb, "{p:*}:*", func(_ *redis.Client, key string) error {
		player := playerOf(key)
		rest := strings.TrimPrefix(key, "{p:"+player+"}:")
		switch {
		case rest == "acct" || rest == "journal":
			if _, ok := players[player]; !ok {
				players[player] = nil
			}
		case strings.HasPrefix(rest, "game:"):
			players[player] = append(players[player], strings.TrimPrefix(rest, "game:"))
		}
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	if s.cold != nil {
		// A player whose every hot key is gone is still checked from the
		// archive (and the loss of their account reported).
		archived, err := s.cold.Players(ctx)
		if err != nil {
			return 0, nil, err
		}
		for _, p := range archived {
			if _, ok := players[p]; !ok {
				players[p] = nil
			}
		}
	}
	names := make([]string, 0, len(players))
	for p := range players {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		r, err := s.verifyPlayer(ctx, p, players[p])
		if err != nil {
			return checked, damaged, err
		}
		checked++
		if len(r.Problems) > 0 {
			damaged = append(damaged, r)
		}
	}
	return checked, damaged, nil
}

// VerifyPlayer checks one player as Verify does (the console's journal
// status).
func (s *Store) VerifyPlayer(ctx context.Context, player string) (JournalReport, error) {
	if !ValidPlayer(player) {
		return JournalReport{}, ErrBadPlayer
	}
	var stored []string
	prefix := keysOf(player).game("")
	err := scanKeys(ctx, s.rdb, prefix+"*", func(_ *redis.Client, key string) error {
		stored = append(stored, strings.TrimPrefix(key, prefix))
		return nil
	})
	if err != nil {
		return JournalReport{}, err
	}
	return s.verifyPlayer(ctx, player, stored)
}

// sealedGame is a game as the journal tells it, its record and result by
// digest (gameDigest; an earlier build's entries carry them whole, and
// are digested as read).
type sealedGame struct {
	rec     string // SHA-256 of the record
	legacy  bool   // from an earlier build: its record expired with its history
	created int64  // legacy only
	choices map[string]string
	settled bool
	win     int64
	result  string // SHA-256 of the result
}

// entryBody is the part of a journal entry's data that verify reads.
type entryBody struct {
	Kind string `json:"kind"`
	Body struct {
		Amount    int64             `json:"amount"`        // deposit, withdraw
		Ticket    string            `json:"ticket"`        // bet
		Total     int64             `json:"total"`         // bet
		Games     []json.RawMessage `json:"games"`         // bet: digests, or records (legacy)
		Game      string            `json:"game"`          // choice, settle
		Win       int64             `json:"win"`           // settle
		Result    json.RawMessage   `json:"result"`        // settle, legacy
		ResultSum string            `json:"result_sha256"` // settle
		Cont      *string           `json:"continue"`
		Box       *string           `json:"box"`
	} `json:"body"`
}

func (s *Store) verifyPlayer(ctx context.Context, player string, stored []string) (JournalReport, error) {
	k := keysOf(player)
	hot, err := readJournal(ctx, s.rdb, k.journal())
	if err != nil {
		return JournalReport{}, err
	}
	// The chain runs from the archive's first entry through Redis's last.
	var entries []journal.Entry
	var cp Checkpoint
	var hasCP bool
	coldGames := map[string]map[string]string{}
	if s.cold != nil {
		if entries, cp, hasCP, err = s.cold.Journal(ctx, player); err != nil {
			return JournalReport{}, err
		}
		cg, err := s.cold.Games(ctx, player)
		if err != nil {
			return JournalReport{}, err
		}
		for _, g := range cg {
			coldGames[g.ID] = g.Fields
		}
	}
	archived := len(entries)
	// Entries in both tiers — archived, then the archiver stopped before
	// trimming Redis — count once when they are the same entry.
	if archived > 0 {
		last := entries[archived-1]
		bySeq := make(map[int64]string, archived)
		for _, e := range entries {
			bySeq[e.Seq] = e.Hash
		}
		for len(hot) > 0 && hot[0].Seq <= last.Seq && bySeq[hot[0].Seq] == hot[0].Hash {
			hot = hot[1:]
		}
		if len(hot) > 0 && hot[0].Prev == "" {
			hot[0].Prev = last.Hash // trimmed up to the archive's last: it chains to that
		}
	}
	entries = append(entries, hot...)
	r := JournalReport{Player: player, Entries: len(entries), Problems: s.seal.Verify(entries)}
	bad := func(format string, args ...any) {
		r.Problems = append(r.Problems, journal.Problem{Index: -1, What: fmt.Sprintf(format, args...)})
	}
	// The archiver's signed checkpoint names the archive's last entry:
	// deleting the newest archived entries, or all of a player's, shows.
	switch {
	case hasCP && !s.seal.ValidTag(cp.MAC, "checkpoint", player, strconv.FormatInt(cp.Seq, 10), cp.Hash):
		bad("archive checkpoint forged (its seal is invalid)")
	case hasCP && (archived == 0 || !holds(entries[:archived], cp)):
		bad("archive lost entries: its checkpoint names entry %d, which it does not hold", cp.Seq)
	case !hasCP && archived > 0:
		bad("archived entries without the archiver's checkpoint")
	}
	acct, err := s.rdb.HGetAll(ctx, k.acct()).Result()
	if err != nil {
		return r, err
	}

	// The tail: the account's head is the journal's last entry.
	jseq, _ := strconv.ParseInt(acct["jseq"], 10, 64)
	switch {
	case len(acct) == 0 && len(entries) > 0:
		bad("account missing: the journal has %d entries", len(entries))
	case len(entries) == 0 && jseq > 0:
		bad("journal missing: the account's head is entry %d", jseq)
	case len(entries) > 0 && (entries[len(entries)-1].Seq != jseq || entries[len(entries)-1].Hash != acct["jhead"]):
		bad("journal tail missing or head altered: the account's head is entry %d, the journal ends at entry %d", jseq, entries[len(entries)-1].Seq)
	}

	// Replay the journal: the money and the games it seals.
	var want Account
	games := map[string]*sealedGame{}
	for i, e := range entries {
		var b entryBody
		if err := json.Unmarshal([]byte(e.Data), &b); err != nil {
			continue // already reported by the chain check
		}
		switch b.Kind {
		case "deposit":
			want.Balance += b.Body.Amount
			want.Deposited += b.Body.Amount
		case "withdraw":
			want.Balance -= b.Body.Amount
			want.Withdrawn += b.Body.Amount
		case "bet":
			want.Balance -= b.Body.Total
			want.House += b.Body.Total
			for _, raw := range b.Body.Games {
				var g struct {
					gameDigest
					Created int64 `json:"created"` // legacy: the record itself
				}
				if json.Unmarshal(raw, &g) != nil || g.ID == "" {
					bad("entry %d: a game that does not parse", e.Seq)
					continue
				}
				sg := &sealedGame{rec: g.Rec, choices: map[string]string{}}
				if g.Rec == "" {
					sg.rec, sg.legacy, sg.created = digest(raw), true, g.Created
				}
				games[g.ID] = sg
			}
		case "choice", "settle":
			g := games[b.Body.Game]
			if g == nil {
				r.Problems = append(r.Problems, journal.Problem{Index: i, Seq: e.Seq, What: "about game " + b.Body.Game + ", which no sealed bet placed"})
				continue
			}
			if b.Kind == "choice" {
				if b.Body.Cont != nil {
					g.choices[ChoiceContinue] = *b.Body.Cont
				}
				if b.Body.Box != nil {
					g.choices[ChoiceBox] = *b.Body.Box
				}
				continue
			}
			want.Balance += b.Body.Win
			want.House -= b.Body.Win
			g.settled, g.win, g.result = true, b.Body.Win, b.Body.ResultSum
			if g.legacy {
				g.result = digest(b.Body.Result)
			}
		}
	}
	if got := parseAccount([]any{acct["balance"], acct["house"], acct["deposited"], acct["withdrawn"]}); len(acct) > 0 && got != want {
		bad("account differs from its journal: stored %+v, journal adds up to %+v", got, want)
	}

	// The stored game records.
	pipe := s.rdb.Pipeline()
	recs := map[string]*redis.MapStringStringCmd{}
	for id := range games {
		recs[id] = pipe.HGetAll(ctx, k.game(id))
	}
	for _, id := range stored {
		if games[id] == nil {
			recs[id] = pipe.HGetAll(ctx, k.game(id))
		}
	}
	for id := range coldGames {
		if recs[id] == nil {
			recs[id] = pipe.HGetAll(ctx, k.game(id))
		}
	}
	if len(recs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return r, err
		}
	}
	horizon := s.Now().Add(-s.cfg.History).UnixMilli()
	ids := make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m, g := recs[id].Val(), games[id]
		if len(m) == 0 {
			m = coldGames[id] // archived
		}
		switch {
		case g == nil:
			bad("game %s: a stored record that no sealed bet placed (forged)", id)
		case len(m) == 0:
			switch {
			case !g.settled:
				bad("game %s: open, but its record is missing", id)
			case !g.legacy:
				bad("game %s: settled, but its record is missing (the journal holds only its digest)", id)
			case g.created > horizon:
				bad("game %s: settled within the history window, but its record is missing", id)
			}
		default:
			s.compareGame(id, m, g, bad)
		}
	}
	return r, nil
}

// holds reports whether the archived entries include the checkpoint's.
func holds(entries []journal.Entry, cp Checkpoint) bool {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Seq == cp.Seq {
			return entries[i].Hash == cp.Hash
		}
	}
	return false
}

// compareGame reports every way a stored game differs from the sealed one.
func (s *Store) compareGame(id string, m map[string]string, g *sealedGame, bad func(string, ...any)) {
	if digest([]byte(m["rec"])) != g.rec {
		bad("game %s: record altered (it differs from the sealed bet)", id)
	}
	for _, f := range []string{ChoiceContinue, ChoiceBox} {
		if m[f] != g.choices[f] {
			bad("game %s: choice %s is %q, sealed %q", id, f, m[f], g.choices[f])
		}
	}
	switch {
	case g.settled && m["status"] != "settled":
		bad("game %s: settled in the journal, stored as %q", id, m["status"])
	case !g.settled && m["status"] != "open":
		bad("game %s: open in the journal, stored as %q", id, m["status"])
	case g.settled && (m["win"] != strconv.FormatInt(g.win, 10) || digest([]byte(m["result"])) != g.result):
		bad("game %s: settlement altered (stored win %s, sealed %d)", id, m["win"], g.win)
	}
	if !s.sealedCopy(id, m) {
		bad("game %s: a seal tag of the stored record is invalid", id)
	}
}
