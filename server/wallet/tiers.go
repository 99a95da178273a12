package wallet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/engine"
	"keno/server/journal"
)

// Redis holds what is hot; the archive (PostgreSQL, package archive) holds
// the rest. The archiver moves a player's sealed journal entries, settled
// games and ledger rows older than the hot window, checked, into the archive
// and trims Redis only after the archive committed them. Reads that miss
// in Redis continue in the archive, transparently.

// Cold is the archive as the wallet reads it.
type Cold interface {
	// GameFields returns the stored fields of those of ids it holds.
	GameFields(ctx context.Context, player string, ids []string) (map[string]map[string]string, error)
	// HistoryFields returns up to limit games with cursor < before (0: no
	// bound) and created at or after since (ms), newest first.
	HistoryFields(ctx context.Context, player string, before, since int64, limit int) ([]ColdGame, error)
	// Journal returns the player's archived entries in order, and the
	// archiver's signed checkpoint (ok false if none).
	Journal(ctx context.Context, player string) ([]journal.Entry, Checkpoint, bool, error)
	// Games returns every archived game of the player (for verify).
	Games(ctx context.Context, player string) ([]ColdGame, error)
	// Players lists every player the archive knows (for verify).
	Players(ctx context.Context) ([]string, error)
}

// ColdGame is a game as the archive returns it.
type ColdGame struct {
	ID     string
	Fields map[string]string
}

// Checkpoint is the archiver's signed record of a player's archived head.
type Checkpoint struct {
	Seq  int64
	Hash string
	MAC  string
}

// ParseGame reads a stored game's fields (from either tier), refusing one
// that is not what was sealed.
func (s *Store) ParseGame(id string, fields map[string]string) (*GameState, error) {
	return s.parseGame(id, fields)
}

// SetCold makes reads fall back to the archive.
func (s *Store) SetCold(c Cold) { s.cold = c }

// CheckpointTag seals a checkpoint: what the archiver writes, verify checks.
func (s *Store) CheckpointTag(player string, seq int64, hash string) string {
	return s.seal.Tag("checkpoint", player, strconv.FormatInt(seq, 10), hash)
}

// HotEntry is a journal entry with its place in the stream.
type HotEntry struct {
	StreamID string
	At       int64 // ms, when it was appended
	journal.Entry
}

// HotGame is a settled game's stored fields with what reports need.
type HotGame struct {
	ID                       string
	Created, Settled, Cursor int64
	Picks                    int
	Stake, Win               int64
	Fields                   map[string]string
}

// HotLedger is one ledger row: the unsealed l… fields of the journal
// entry that moved the money (or, written by builds before that, an entry
// of a ledger stream of its own, moved until none is left).
type HotLedger struct {
	StreamID        string
	At              int64
	Kind, Ref       string
	Amount, Balance int64
}

// Movable is what may leave Redis for one player: journal entries older
// than the cutoff, in order, the games they settle, and old ledger rows.
type Movable struct {
	Player  string
	Entries []HotEntry
	Games   []HotGame
	Ledger  []HotLedger
	Tickets []string // bets archived: their retry records go too

	lastJournal string // the last stream id read (trimmed up to it)
	lastLegacy  string // the same, of an earlier build's ledger stream
}

// Empty reports whether there is nothing to move or trim.
func (m *Movable) Empty() bool { return m.lastJournal == "" && m.lastLegacy == "" }

// ErrChain: the hot journal does not continue the archived one; nothing of
// the player moves until verify explains it.
var ErrChain = errors.New("wallet: the hot journal does not continue the archived chain")

// Movable reads up to max journal entries of player appended before cutoff,
// checks that they continue the archived chain after head, and gathers the
// settled games and ledger rows that go with them.
func (s *Store) Movable(ctx context.Context, player string, head journal.Head, cutoff time.Time, max int) (*Movable, error) {
	k := keysOf(player)
	end := "(" + strconv.FormatInt(cutoff.UnixMilli(), 10)
	msgs, err := s.rdb.XRangeN(ctx, k.journal(), "-", end, int64(max)).Result()
	if err != nil {
		return nil, err
	}
	m := &Movable{Player: player}
	prev := head.Hash // the first read follows the archive's last, unless it is archived itself
	for _, x := range msgs {
		e := hotEntry(x, prev)
		prev = e.Hash
		if e.Seq <= head.Seq {
			continue // archived before a crash, not yet trimmed: trimmed below
		}
		m.Entries = append(m.Entries, e)
		if row, ok := ledgerRow(x, "lt", "lk", "la", "lb", "lr"); ok {
			m.Ledger = append(m.Ledger, row)
		}
	}
	entries := make([]journal.Entry, len(m.Entries))
	for i, e := range m.Entries {
		entries[i] = e.Entry
	}
	if p := s.seal.VerifyFrom(head, entries); len(p) > 0 {
		return nil, fmt.Errorf("%w: player %s: %s", ErrChain, player, p[0])
	}
	// The games and tickets of every entry read, those archived before a
	// crash included: their records are trimmed now.
	var settled []string
	for _, x := range msgs {
		var b struct {
			Kind string `json:"kind"`
			Body struct {
				Game   string `json:"game"`
				Ticket string `json:"ticket"`
			} `json:"body"`
		}
		data, _ := x.Values["data"].(string)
		if json.Unmarshal([]byte(data), &b) != nil {
			continue
		}
		switch b.Kind {
		case "settle":
			settled = append(settled, b.Body.Game)
		case "bet":
			m.Tickets = append(m.Tickets, b.Body.Ticket)
		}
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(settled))
	for i, id := range settled {
		cmds[i] = pipe.HGetAll(ctx, k.game(id))
	}
	legacy := pipe.XRangeN(ctx, k.ledger(), "-", end, int64(4*max))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i, id := range settled {
		f := cmds[i].Val()
		if len(f) == 0 {
			// An earlier build's record, expired with its history: its
			// journal entry holds it. (A record this build wrote never
			// expires; verify reports one missing.)
			continue
		}
		if !s.sealedCopy(id, f) || f["status"] != "settled" {
			return nil, fmt.Errorf("%w: player %s: game %s is not its sealed settled self", ErrChain, player, id)
		}
		// Only what the archive's columns need: the record stays as stored.
		var rec struct {
			Created int64 `json:"created"`
			Outcome struct {
				Picks engine.Picks `json:"picks"`
				Stake int64        `json:"stake"`
			} `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(f["rec"]), &rec); err != nil {
			return nil, err
		}
		num := func(k string) int64 { n, _ := strconv.ParseInt(f[k], 10, 64); return n }
		m.Games = append(m.Games, HotGame{ID: id, Created: rec.Created, Settled: num("settled"), Cursor: num("cursor"),
			Picks: len(rec.Outcome.Picks), Stake: rec.Outcome.Stake, Win: num("win"), Fields: f})
	}
	for _, x := range legacy.Val() {
		row, _ := ledgerRow(x, "t", "kind", "amount", "balance", "ref")
		m.Ledger = append(m.Ledger, row)
		m.lastLegacy = x.ID
	}
	m.lastJournal = lastID(msgs)
	return m, nil
}

// ledgerRow reads a ledger row from a stream entry's fields of the given
// names (when, kind, amount, balance, ref); ok is false if it has none.
func ledgerRow(x redis.XMessage, t, kind, amount, balance, ref string) (row HotLedger, ok bool) {
	get := func(f string) string { v, _ := x.Values[f].(string); return v }
	if get(kind) == "" {
		return HotLedger{}, false
	}
	at, _ := strconv.ParseInt(get(t), 10, 64)
	a, _ := strconv.ParseInt(get(amount), 10, 64)
	b, _ := strconv.ParseInt(get(balance), 10, 64)
	return HotLedger{StreamID: x.ID, At: at, Kind: get(kind), Ref: get(ref), Amount: a, Balance: b}, true
}

func lastID(msgs []redis.XMessage) string {
	if len(msgs) == 0 {
		return ""
	}
	return msgs[len(msgs)-1].ID
}

// hotEntry reads a journal stream message, read in order after an entry
// whose hash is prev ("" where nothing came before it, or where what came
// before is not known here: the first entry left after the archiver
// trimmed, which verify links to the archive's last). This build's
// entries do not store their prev, the hash of the entry before them (an
// earlier build's do): it is linked from prev, which is what the entry's
// hash was sealed over, so the chain's hash check still catches an entry
// altered, removed or moved.
func hotEntry(x redis.XMessage, prev string) HotEntry {
	get := func(f string) string { v, _ := x.Values[f].(string); return v }
	seq, _ := strconv.ParseInt(get("seq"), 10, 64)
	ms, _, _ := strings.Cut(x.ID, "-")
	at, _ := strconv.ParseInt(ms, 10, 64)
	e := journal.Entry{Seq: seq, Prev: get("prev"), Hash: get("hash"), MAC: get("mac"), Data: get("data")}
	if _, stored := x.Values["prev"]; !stored && seq != 1 {
		e.Prev = prev // the first entry chains to nothing
	}
	return HotEntry{StreamID: x.ID, At: at, Entry: e}
}

// afterID is the smallest stream id above id ("ms-seq"): XTRIM MINID
// afterID removes id and everything before it.
func afterID(id string) string {
	ms, seq, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseUint(seq, 10, 64)
	return ms + "-" + strconv.FormatUint(n+1, 10)
}

// Trim removes from Redis what m moved, once the archive has committed
// it: the journal and ledger up to the last moved entry, the settled
// games' records and history entries, the archived bets' retry records.
// Entries appended meanwhile are newer and stay.
func (s *Store) Trim(ctx context.Context, m *Movable) error {
	k := keysOf(m.Player)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if m.lastJournal != "" {
			p.XTrimMinID(ctx, k.journal(), afterID(m.lastJournal))
		}
		if m.lastLegacy != "" {
			p.XTrimMinID(ctx, k.ledger(), afterID(m.lastLegacy))
		}
		if len(m.Games) > 0 {
			ids := make([]any, len(m.Games))
			keys := make([]string, len(m.Games))
			for i, g := range m.Games {
				ids[i], keys[i] = g.ID, k.game(g.ID)
			}
			p.Del(ctx, keys...)
			p.ZRem(ctx, k.history(), ids...)
		}
		for _, t := range m.Tickets {
			p.Del(ctx, k.op("t-"+t))
		}
		return nil
	})
	if err != nil {
		return err
	}
	// An idle player's streams, emptied, go too (an empty stream still
	// costs some 400 bytes); the next entry makes them again. One script:
	// an entry appended meanwhile keeps its stream.
	return dropEmpty.Run(ctx, s.rdb, []string{k.journal(), k.ledger()}).Err()
}

var dropEmpty = redis.NewScript(`for _, k in ipairs(KEYS) do if redis.call('XLEN', k) == 0 then redis.call('DEL', k) end end return 0`)

// Players calls fn for every player with a journal, in SCAN order.
func (s *Store) Players(ctx context.Context, fn func(player string) error) error {
	return scanKeys(ctx, s.rdb, "{p:*}:journal", func(_ *redis.Client, key string) error { return fn(playerOf(key)) })
}
