package archive

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"keno/server/journal"
)

// DayRow is one line of the daily report: a day, pick count and stake.
type DayRow struct {
	Day    string `json:"day"` // YYYY-MM-DD, UTC
	Picks  int    `json:"picks"`
	Stake  int64  `json:"stake"`
	Games  int64  `json:"games"`
	Stakes int64  `json:"stakes"` // cents
	Wins   int64  `json:"wins"`   // cents
	GGR    int64  `json:"ggr"`    // stakes − wins
}

// Daily reports stakes, wins, GGR and games per day (of settlement), pick
// count and stake, over the archived games settled in [from, to).
func (a *Archive) Daily(ctx context.Context, from, to time.Time) ([]DayRow, error) {
	rows, err := a.pool.Query(ctx, `SELECT to_char(date_trunc('day', settled AT TIME ZONE 'UTC'), 'YYYY-MM-DD'), picks, stake,
			count(*), sum(stake), sum(win)
		FROM games WHERE settled >= $1 AND settled < $2 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []DayRow
	for rows.Next() {
		var r DayRow
		if err := rows.Scan(&r.Day, &r.Picks, &r.Stake, &r.Games, &r.Stakes, &r.Wins); err != nil {
			return nil, err
		}
		r.GGR = r.Stakes - r.Wins
		out = append(out, r)
	}
	return out, rows.Err()
}

// StatementRow is one money movement of a player.
type StatementRow struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Amount  int64     `json:"amount"`
	Balance int64     `json:"balance"`
	Ref     string    `json:"ref"`
}

// Statement lists a player's archived money movements in [from, to).
func (a *Archive) Statement(ctx context.Context, player string, from, to time.Time) ([]StatementRow, error) {
	rows, err := a.pool.Query(ctx, `SELECT at, kind, amount, balance, ref FROM ledger
		WHERE player = $1 AND at >= $2 AND at < $3 ORDER BY at, stream_id`, player, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StatementRow
	for rows.Next() {
		var r StatementRow
		if err := rows.Scan(&r.At, &r.Kind, &r.Amount, &r.Balance, &r.Ref); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ExportLine is one sealed entry in an export (JSON Lines).
type ExportLine struct {
	Player string    `json:"player"`
	At     time.Time `json:"at"`
	journal.Entry
}

// Export writes the sealed entries archived in [from, to) as JSON Lines,
// each with its hash and seal, player by player in chain order: what
// `keno-server verify -export FILE` checks offline.
func (a *Archive) Export(ctx context.Context, from, to time.Time, w io.Writer) (int, error) {
	rows, err := a.pool.Query(ctx, `SELECT player, at, seq, prev, hash, mac, data FROM journal
		WHERE at >= $1 AND at < $2 ORDER BY player, seq`, from, to)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	n := 0
	for rows.Next() {
		var l ExportLine
		if err := rows.Scan(&l.Player, &l.At, &l.Seq, &l.Prev, &l.Hash, &l.MAC, &l.Data); err != nil {
			return n, err
		}
		if err := enc.Encode(l); err != nil {
			return n, err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// VerifyExport checks an export offline: every entry's hash and seal, and
// that each player's entries follow one another without a gap (an export
// starts wherever its date range does, so the first entry of each player
// is taken as given). It returns the entries read and what is wrong.
func VerifyExport(r io.Reader, seal *journal.Sealer) (int, []string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var problems []string
	n := 0
	var player string
	var run []journal.Entry
	check := func() {
		if len(run) == 0 {
			return
		}
		head := journal.Head{Seq: run[0].Seq - 1, Hash: run[0].Prev}
		for _, p := range seal.VerifyFrom(head, run) {
			problems = append(problems, fmt.Sprintf("player %s: %s", player, p))
		}
	}
	for sc.Scan() {
		var l ExportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			problems = append(problems, fmt.Sprintf("line %d: not an export line: %v", n+1, err))
			n++
			continue
		}
		n++
		if l.Player != player {
			check()
			player, run = l.Player, nil
		}
		run = append(run, l.Entry)
	}
	check()
	return n, problems, sc.Err()
}
