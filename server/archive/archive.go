// Package archive is the PostgreSQL tier: every sealed journal entry,
// settled game and ledger row that left Redis, kept for years, read back
// transparently (history, game detail, replay, the operator's recall),
// verified across both tiers, and reported on (GGR, statements, exports).
package archive

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"keno/server/journal"
	"keno/server/wallet"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Archive is a connection pool to the archive database.
type Archive struct {
	pool   *pgxpool.Pool
	months sync.Map // "journal 2026-12" → partition exists
}

// Open connects and brings the schema up to date.
func Open(ctx context.Context, url string) (*Archive, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("ARCHIVE_URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a := &Archive{pool: pool}
	if err := a.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return a, nil
}

// Close closes the pool.
func (a *Archive) Close() { a.pool.Close() }

// Ping checks the database.
func (a *Archive) Ping(ctx context.Context) error { return a.pool.Ping(ctx) }

// migrate applies the embedded migrations not yet applied, each in its own
// transaction, under an advisory lock: servers starting together apply
// each once.
func (a *Archive) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	conn, err := a.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7468211)`); err != nil {
		return err
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(7468211)`)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil {
			return fmt.Errorf("migration %s: name must start with its version", base)
		}
		var done bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, v).Scan(&done); err != nil {
			return err
		}
		if done {
			continue
		}
		sql, _ := migrations.ReadFile(name)
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, base)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %s: %w", base, err)
		}
	}
	return nil
}

// Version is the schema version applied.
func (a *Archive) Version(ctx context.Context) (int, error) {
	var v int
	err := a.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// partition makes sure the month of t has its own partition of table, so
// the default partition stays empty (a month is created before its first
// row, by whichever archiver gets there first).
func (a *Archive) partition(ctx context.Context, table string, t time.Time) error {
	first := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	key := table + first.Format(" 2006-01")
	if _, ok := a.months.Load(key); ok {
		return nil
	}
	name := fmt.Sprintf("%s_y%04dm%02d", table, first.Year(), first.Month())
	_, err := a.pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
		name, table, first.Format(time.RFC3339), first.AddDate(0, 1, 0).Format(time.RFC3339)))
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("partition %s: %w", name, err)
	}
	a.months.Store(key, true)
	return nil
}

// Heads returns the archived head (checkpoint) of each player that has one.
func (a *Archive) Heads(ctx context.Context, players []string) (map[string]journal.Head, error) {
	rows, err := a.pool.Query(ctx, `SELECT player, seq, hash FROM checkpoints WHERE player = ANY($1)`, players)
	if err != nil {
		return nil, err
	}
	out := map[string]journal.Head{}
	for rows.Next() {
		var p string
		var h journal.Head
		if err := rows.Scan(&p, &h.Seq, &h.Hash); err != nil {
			return nil, err
		}
		out[p] = h
	}
	return out, rows.Err()
}

// Save writes what several players move, and their new checkpoints, in one
// transaction. Everything is keyed: saving again changes nothing.
func (a *Archive) Save(ctx context.Context, ms []*wallet.Movable, checkpoint func(player string, seq int64, hash string) string) error {
	var j struct {
		player, sid, prev, hash, mac, data []string
		seq                                []int64
		at                                 []time.Time
	}
	var g struct {
		player, id                []string
		created, settled          []time.Time
		cursor, stake, win, picks []int64
		fields                    []string
	}
	var l struct {
		player, sid, kind, ref []string
		at                     []time.Time
		amount, balance        []int64
	}
	var cp struct {
		player, hash, mac []string
		seq               []int64
	}
	type month struct {
		table string
		first time.Time
	}
	months := map[month]bool{}
	addMonth := func(table string, t time.Time) {
		months[month{table, time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)}] = true
	}
	for _, m := range ms {
		for _, e := range m.Entries {
			at := time.UnixMilli(e.At).UTC()
			j.player, j.sid, j.prev, j.hash, j.mac, j.data = append(j.player, m.Player), append(j.sid, e.StreamID), append(j.prev, e.Prev), append(j.hash, e.Hash), append(j.mac, e.MAC), append(j.data, e.Data)
			j.seq, j.at = append(j.seq, e.Seq), append(j.at, at)
			addMonth("journal", at)
		}
		if n := len(m.Entries); n > 0 {
			last := m.Entries[n-1]
			cp.player, cp.hash, cp.seq = append(cp.player, m.Player), append(cp.hash, last.Hash), append(cp.seq, last.Seq)
			cp.mac = append(cp.mac, checkpoint(m.Player, last.Seq, last.Hash))
		}
		for _, x := range m.Games {
			f, err := json.Marshal(x.Fields)
			if err != nil {
				return err
			}
			created := time.UnixMilli(x.Created).UTC()
			g.player, g.id, g.fields = append(g.player, m.Player), append(g.id, x.ID), append(g.fields, string(f))
			g.created, g.settled = append(g.created, created), append(g.settled, time.UnixMilli(x.Settled).UTC())
			g.cursor, g.stake, g.win, g.picks = append(g.cursor, x.Cursor), append(g.stake, x.Stake), append(g.win, x.Win), append(g.picks, int64(x.Picks))
			addMonth("games", created)
		}
		for _, x := range m.Ledger {
			at := time.UnixMilli(x.At).UTC()
			l.player, l.sid, l.kind, l.ref = append(l.player, m.Player), append(l.sid, x.StreamID), append(l.kind, x.Kind), append(l.ref, x.Ref)
			l.at, l.amount, l.balance = append(l.at, at), append(l.amount, x.Amount), append(l.balance, x.Balance)
			addMonth("ledger", at)
		}
	}
	for m := range months {
		if err := a.partition(ctx, m.table, m.first); err != nil {
			return err
		}
	}
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		if len(j.seq) > 0 {
			b.Queue(`INSERT INTO journal (player, seq, at, stream_id, prev, hash, mac, data)
				SELECT * FROM unnest($1::text[], $2::bigint[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
				ON CONFLICT DO NOTHING`, j.player, j.seq, j.at, j.sid, j.prev, j.hash, j.mac, j.data)
		}
		if len(g.id) > 0 {
			b.Queue(`INSERT INTO games (player, id, created, settled, cursor, picks, stake, win, fields)
				SELECT p, i, c, s, cu, pk::smallint, st, w, f::json FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[]) AS x(p, i, c, s, cu, pk, st, w, f)
				ON CONFLICT DO NOTHING`, g.player, g.id, g.created, g.settled, g.cursor, g.picks, g.stake, g.win, g.fields)
		}
		if len(l.sid) > 0 {
			b.Queue(`INSERT INTO ledger (player, stream_id, at, kind, amount, balance, ref)
				SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::bigint[], $6::bigint[], $7::text[])
				ON CONFLICT DO NOTHING`, l.player, l.sid, l.at, l.kind, l.amount, l.balance, l.ref)
		}
		if len(cp.player) > 0 {
			// A checkpoint only moves forward (a slow archiver that lost its
			// lease cannot take one back).
			b.Queue(`INSERT INTO checkpoints (player, seq, hash, mac, at)
				SELECT p, s, h, m, now() FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) AS x(p, s, h, m)
				ON CONFLICT (player) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, mac = excluded.mac, at = excluded.at
				WHERE checkpoints.seq < excluded.seq`, cp.player, cp.seq, cp.hash, cp.mac)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// ---- reads: the wallet's Cold ----

func scanGames(rows pgx.Rows) ([]wallet.ColdGame, error) {
	var out []wallet.ColdGame
	for rows.Next() {
		var g wallet.ColdGame
		if err := rows.Scan(&g.ID, &g.Fields); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// GameFields implements wallet.Cold.
func (a *Archive) GameFields(ctx context.Context, player string, ids []string) (map[string]map[string]string, error) {
	rows, err := a.pool.Query(ctx, `SELECT id, fields FROM games WHERE player = $1 AND id = ANY($2)`, player, ids)
	if err != nil {
		return nil, err
	}
	gs, err := scanGames(rows)
	out := make(map[string]map[string]string, len(gs))
	for _, g := range gs {
		out[g.ID] = g.Fields
	}
	return out, err
}

// HistoryFields implements wallet.Cold.
func (a *Archive) HistoryFields(ctx context.Context, player string, before, since int64, limit int) ([]wallet.ColdGame, error) {
	rows, err := a.pool.Query(ctx, `SELECT id, fields FROM games
		WHERE player = $1 AND ($2::bigint = 0 OR cursor < $2::bigint) AND created >= $3 ORDER BY cursor DESC LIMIT $4`,
		player, before, time.UnixMilli(since).UTC(), limit)
	if err != nil {
		return nil, err
	}
	return scanGames(rows)
}

// Games implements wallet.Cold.
func (a *Archive) Games(ctx context.Context, player string) ([]wallet.ColdGame, error) {
	rows, err := a.pool.Query(ctx, `SELECT id, fields FROM games WHERE player = $1`, player)
	if err != nil {
		return nil, err
	}
	return scanGames(rows)
}

// Journal implements wallet.Cold.
func (a *Archive) Journal(ctx context.Context, player string) ([]journal.Entry, wallet.Checkpoint, bool, error) {
	var cp wallet.Checkpoint
	err := a.pool.QueryRow(ctx, `SELECT seq, hash, mac FROM checkpoints WHERE player = $1`, player).Scan(&cp.Seq, &cp.Hash, &cp.MAC)
	has := err == nil
	if err != nil && err != pgx.ErrNoRows {
		return nil, cp, false, err
	}
	rows, err := a.pool.Query(ctx, `SELECT seq, prev, hash, mac, data FROM journal WHERE player = $1 ORDER BY seq, at`, player)
	if err != nil {
		return nil, cp, false, err
	}
	var out []journal.Entry
	for rows.Next() {
		var e journal.Entry
		if err := rows.Scan(&e.Seq, &e.Prev, &e.Hash, &e.MAC, &e.Data); err != nil {
			return nil, cp, false, err
		}
		out = append(out, e)
	}
	return out, cp, has, rows.Err()
}

// Players implements wallet.Cold.
func (a *Archive) Players(ctx context.Context) ([]string, error) {
	rows, err := a.pool.Query(ctx, `SELECT player FROM checkpoints UNION SELECT DISTINCT player FROM journal`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Recall finds a game by id, whoever played it and however old it is.
func (a *Archive) Recall(ctx context.Context, id string) (player string, fields map[string]string, err error) {
	err = a.pool.QueryRow(ctx, `SELECT player, fields FROM games WHERE id = $1 LIMIT 1`, id).Scan(&player, &fields)
	if err == pgx.ErrNoRows {
		return "", nil, wallet.ErrNoGame
	}
	return player, fields, err
}

// Counts is how much the archive holds (for the load tester and ops).
type Counts struct {
	Entries, Games, Ledger, Players int64
	Bytes                           int64 // the database's size on disk
}

// Count counts the archive's rows.
func (a *Archive) Count(ctx context.Context) (Counts, error) {
	var c Counts
	err := a.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM journal), (SELECT count(*) FROM games), (SELECT count(*) FROM ledger),
			(SELECT count(*) FROM checkpoints), pg_database_size(current_database())`).
		Scan(&c.Entries, &c.Games, &c.Ledger, &c.Players, &c.Bytes)
	return c, err
}
