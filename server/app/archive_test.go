package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"keno/engine"
	"keno/protocol"
	"keno/server/archive"
	"keno/server/archive/pgtest"
	"keno/server/wallet"
)

// withArchive gives the server a real PostgreSQL archive and a short hot
// window.
func withArchive(pg *pgtest.Server, hot time.Duration) option {
	return func(c *Config) {
		c.ArchiveURL, c.HotWindow, c.ArchiveEvery = pg.URL(), hot, 100*time.Millisecond
	}
}

// playSome plays n quick tickets of two grids for player, continuing and
// opening the last box when offered.
func playSome(t *testing.T, c *protocol.Client, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := c.Play(ctxT(t), []protocol.Grid{{QuickPick: 3 + i%6, Stake: 100}, {QuickPick: 8 - i%6, Stake: 50}},
			protocol.Strategy{Continue: func(*engine.Main) bool { return i%2 == 0 }, Box: func() int { return 4 }})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// views are what a player can ask about their games: the history pages
// and every game's detail, as JSON.
func views(t *testing.T, c *protocol.Client) []string {
	t.Helper()
	var out []string
	var before int64
	for {
		h, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.THistory, Before: before, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(h.History)
		out = append(out, string(b))
		for _, it := range h.History {
			d, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TGame, Game: it.Game})
			if err != nil {
				t.Fatalf("game %s: %v", it.Game, err)
			}
			b, _ := json.Marshal(d.Detail)
			out = append(out, string(b))
		}
		if len(h.History) < 7 {
			return out
		}
		before = h.Next
	}
}

// waitArchived waits until Redis holds no game record of player.
func waitArchived(t *testing.T, ts *testServer, player string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		keys, _ := ts.app.Redis.Keys(context.Background(), "{p:"+player+"}:game:*").Result()
		n, _ := ts.app.Redis.XLen(context.Background(), "{p:"+player+"}:journal").Result()
		if len(keys) == 0 && n == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("player %s: Redis still holds games or journal entries", player)
}

func opsGet(t *testing.T, ts *testServer, path string) (int, []byte) {
	t.Helper()
	code, body := opsDo(t, ts, "GET", path, "")
	return code, []byte(body)
}

// Games move to PostgreSQL once older than the hot window; the player sees
// exactly the same history, details and replays; Redis keeps only hot
// state; the books balance and verify is clean across both tiers; the
// operator's reports, statement, recall and export work.
func TestArchiveMovesAndReadsBack(t *testing.T) {
	pg := pgtest.Start(t)
	ts := startServer(t, nil, withArchive(pg, 2*time.Second))
	c := ts.player("archie", 20_000)
	playSome(t, c, 8)
	before := views(t, c) // all still in Redis (2 s hot window)
	waitArchived(t, ts, "archie")
	after := views(t, c)
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Fatalf("history or details changed when the games moved to the archive:\nbefore %v\nafter  %v", before, after)
	}
	if _, err := c.Request(ctxT(t), &protocol.Request{Type: protocol.TReplay, Last: true}); err != nil {
		t.Fatalf("replay of an archived game: %v", err)
	}
	counts, err := ts.app.Archive.Count(context.Background())
	if err != nil || counts.Games != 16 || counts.Players != 1 {
		t.Fatalf("archive holds %+v (%v), want 16 games of 1 player", counts, err)
	}
	// Redis keeps hot state only.
	keys, _ := ts.app.Redis.Keys(context.Background(), "{p:archie}:*").Result()
	for _, k := range keys {
		if strings.Contains(k, ":game:") || strings.Contains(k, ":op:t-") {
			t.Errorf("Redis still holds %s", k)
		}
	}
	ts.checkBooks()
	checked, damaged, err := ts.app.Store.Verify(context.Background())
	if err != nil || checked != 1 || len(damaged) != 0 {
		t.Fatalf("verify across tiers: %d checked, %+v, %v", checked, damaged, err)
	}

	// Reports: the daily GGR adds up to the games' stakes and wins.
	day := time.Now().UTC().Format(time.DateOnly)
	code, body := opsGet(t, ts, "/api/ops/reports/daily?from="+day+"&to="+day)
	var rows []archive.DayRow
	if code != 200 || json.Unmarshal(body, &rows) != nil {
		t.Fatalf("daily report: %d %s", code, body)
	}
	var games, stakes, wins, ggr int64
	for _, r := range rows {
		games, stakes, wins, ggr = games+r.Games, stakes+r.Stakes, wins+r.Wins, ggr+r.GGR
	}
	b, _ := ts.app.Store.Account(context.Background(), "archie")
	if games != 16 || stakes != 8*150 || ggr != stakes-wins || 20_000-stakes+wins != b.Balance {
		t.Errorf("daily report: %d games, stakes %d, wins %d, ggr %d; balance %d", games, stakes, wins, ggr, b.Balance)
	}
	if code, body := opsGet(t, ts, "/api/ops/reports/daily?from="+day+"&to="+day+"&format=csv"); code != 200 || !bytes.HasPrefix(body, []byte("day,picks,stake_cents,games")) {
		t.Errorf("daily CSV: %d %s", code, body)
	}
	if code, body := opsGet(t, ts, "/api/ops/reports/daily?from=yesterday&to="+day); code != 400 {
		t.Errorf("a bad date: %d %s", code, body)
	}
	code, body = opsGet(t, ts, "/api/ops/players/archie/statement?from="+day+"&to="+day)
	var st []archive.StatementRow
	if code != 200 || json.Unmarshal(body, &st) != nil || len(st) != 1+8+16 { // deposit, 8 bets, 16 wins
		t.Fatalf("statement: %d\n%s", code, body)
	}
	// Each row's balance is the one before it moved by its amount, from the
	// deposit to the account's balance now; every bet and win is there.
	kinds := map[string]int{}
	for i, r := range st {
		kinds[r.Kind]++
		prev := int64(0)
		if i > 0 {
			prev = st[i-1].Balance
		}
		if r.Balance != prev+r.Amount || r.Ref == "" || r.At.IsZero() {
			t.Errorf("statement row %d: %+v after a balance of %d", i, r, prev)
		}
	}
	if kinds["deposit"] != 1 || kinds["stake"] != 8 || kinds["win"] != 16 || st[len(st)-1].Balance != b.Balance {
		t.Errorf("statement: %v, last balance %d, account %d", kinds, st[len(st)-1].Balance, b.Balance)
	}
	if code, body := opsGet(t, ts, "/api/ops/players/archie/statement?from="+day+"&to="+day+"&format=csv"); code != 200 || bytes.Count(body, []byte("\n")) != 1+len(st) {
		t.Errorf("statement CSV: %d\n%s", code, body)
	}
	// Recall: any game by its id, however old: still found 40 days on,
	// when the player's own history no longer lists it.
	var page []protocol.HistoryItem
	json.Unmarshal([]byte(before[0]), &page)
	first := page[len(page)-1]
	ts.ahead.Store(int64(40 * 24 * time.Hour))
	if h, _ := ts.app.Store.History(context.Background(), "archie", 0, 20); len(h) != 0 {
		t.Errorf("the player's history lists %d games older than 31 days", len(h))
	}
	code, body = opsGet(t, ts, "/api/ops/games/"+first.Game)
	if code != 200 || !strings.Contains(string(body), `"player":"archie"`) || !strings.Contains(string(body), first.Game) {
		t.Errorf("recall of %s: %d %s", first.Game, code, body)
	}
	ts.ahead.Store(0)
	// Export, checked offline; a changed byte is caught.
	code, body = opsGet(t, ts, "/api/ops/export?from="+day+"&to="+day)
	n, problems, err := archive.VerifyExport(bytes.NewReader(body), ts.app.Store.Sealer())
	if code != 200 || err != nil || n != int(counts.Entries) || len(problems) != 0 {
		t.Fatalf("export: %d, %d entries of %d, %v %v", code, n, counts.Entries, problems, err)
	}
	forged := bytes.Replace(body, []byte(`\"amount\":20000`), []byte(`\"amount\":90000`), 1)
	if _, problems, _ := archive.VerifyExport(bytes.NewReader(forged), ts.app.Store.Sealer()); len(problems) == 0 {
		t.Error("an altered export passed")
	}
}

// Tampering in PostgreSQL — alter, delete the newest, delete a whole
// player, reorder, forge — is reported by verify, each case.
func TestArchiveTamperingIsReported(t *testing.T) {
	pg := pgtest.Start(t)
	ts := startServer(t, nil, withArchive(pg, time.Second))
	cases := map[string]string{
		"alter":   `UPDATE journal SET data = replace(data, '"amount":5000', '"amount":9000') WHERE player = $1 AND seq = 1`,
		"newest":  `DELETE FROM journal WHERE player = $1 AND seq = (SELECT max(seq) FROM journal WHERE player = $1)`,
		"player":  `WITH a AS (DELETE FROM journal WHERE player = $1), b AS (DELETE FROM games WHERE player = $1), c AS (DELETE FROM ledger WHERE player = $1) DELETE FROM checkpoints WHERE player = $1`,
		"reorder": `UPDATE journal j SET data = o.data, hash = o.hash FROM journal o WHERE j.player = $1 AND o.player = $1 AND ((j.seq = 2 AND o.seq = 3) OR (j.seq = 3 AND o.seq = 2))`,
		"forge":   `INSERT INTO journal (player, seq, at, stream_id, prev, hash, mac, data) SELECT player, seq + 1000, at, stream_id, hash, hash, mac, data FROM journal WHERE player = $1 AND seq = 1`,
		"game":    `UPDATE games SET fields = jsonb_set(fields::jsonb, '{win}', '"99999"')::json WHERE player = $1 AND id = (SELECT id FROM games WHERE player = $1 LIMIT 1)`,
	}
	for name := range cases {
		c := ts.player("t-"+name, 5_000)
		playSome(t, c, 3)
	}
	for name := range cases {
		waitArchived(t, ts, "t-"+name)
	}
	if _, damaged, err := ts.app.Store.Verify(context.Background()); err != nil || len(damaged) != 0 {
		t.Fatalf("before tampering: %+v %v", damaged, err)
	}
	// (The archiver keeps running: it finds nothing left to move, and
	// never rewrites what the archive holds.)
	db, err := pgx.Connect(context.Background(), pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	for name, sql := range cases {
		if _, err := db.Exec(context.Background(), sql, "t-"+name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	_, damaged, err := ts.app.Store.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range damaged {
		got[d.Player] = fmt.Sprint(d.Problems)
	}
	for name := range cases {
		if got["t-"+name] == "" {
			t.Errorf("%s in PostgreSQL was not reported", name)
		} else {
			t.Logf("%s: %s", name, got["t-"+name])
		}
	}
}

// PostgreSQL down: play goes on, Redis keeps everything, the lag shows;
// back: the archiver catches up. A crash between the archive's commit and
// Redis's trim duplicates nothing. Verify stays clean throughout.
func TestArchiveSurvivesFaults(t *testing.T) {
	pg := pgtest.Start(t)
	ts := startServer(t, nil, withArchive(pg, time.Second))
	c := ts.player("faulty", 20_000)
	playSome(t, c, 2)
	waitArchived(t, ts, "faulty")

	pg.Stop()
	playSome(t, c, 3) // play goes on without the archive
	time.Sleep(2500 * time.Millisecond)
	if n, _ := ts.app.Redis.XLen(context.Background(), "{p:faulty}:journal").Result(); n == 0 {
		t.Fatal("Redis trimmed entries the archive could not take")
	}
	if lag := testutil.ToFloat64(ts.app.Metrics.ArchiveLag); lag <= 0 {
		t.Errorf("archive down, lag %v s", lag)
	}
	if f := testutil.ToFloat64(ts.app.Metrics.ArchiveFailures); f == 0 {
		t.Error("no failure counted while the archive was down")
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	waitArchived(t, ts, "faulty")
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(ts.app.Metrics.ArchiveLag) != 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if lag := testutil.ToFloat64(ts.app.Metrics.ArchiveLag); lag != 0 {
		t.Errorf("archive back, lag still %v s", lag)
	}

	// A crash after the commit, before the trim: the same entries are
	// committed again later (keyed: once), then trimmed.
	playSome(t, c, 2)
	heads, err := ts.app.Archive.Heads(context.Background(), []string{"faulty"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ts.app.Store.Movable(context.Background(), "faulty", heads["faulty"], time.Now().Add(time.Minute), 2000)
	if err != nil || len(m.Entries) == 0 {
		t.Fatalf("movable: %+v %v", m, err)
	}
	if err := ts.app.Archive.Save(context.Background(), []*wallet.Movable{m}, ts.app.Store.CheckpointTag); err != nil {
		t.Fatal(err)
	}
	waitArchived(t, ts, "faulty")
	counts, _ := ts.app.Archive.Count(context.Background())
	if counts.Games != 14 {
		t.Errorf("archive holds %d games, 14 were played", counts.Games)
	}
	ts.checkBooks()
	if _, damaged, err := ts.app.Store.Verify(context.Background()); err != nil || len(damaged) != 0 {
		t.Fatalf("verify: %+v %v", damaged, err)
	}
}
