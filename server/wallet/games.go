package wallet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/engine"
	"keno/server/journal"
)

// Fairness identifies the provably fair inputs of a game.
type Fairness struct {
	Commit     string `json:"commit"` // SHA-256 of the server seed, published before the bet
	ClientSeed string `json:"client_seed"`
	Nonce      uint64 `json:"nonce"`
}

// GameRecord is one game as fixed at bet acceptance.
type GameRecord struct {
	ID      string         `json:"id"`
	Ticket  string         `json:"ticket"`
	Index   int            `json:"index"` // position in the ticket, 0-based
	Grids   int            `json:"grids"` // games in the ticket
	Player  string         `json:"player"`
	Created int64          `json:"created"` // ms since epoch
	Fair    Fairness       `json:"fair"`
	Outcome engine.Outcome `json:"outcome"`
}

// Ticket is a bet of 1..5 games, debited whole, dealt from Seed (the
// server seed the games' commitment names) with consecutive nonces.
type Ticket struct {
	ID    string
	Seed  []byte
	Games []GameRecord
	// Paid: seamless mode — the operator has debited the total; this is
	// what it answered. The bet lands only if the debit is still in flight
	// in the outbox (not rolled back), and takes it out.
	Paid *Paid
	// Intended: seamless mode — the debit's intent was written in flight
	// when the ticket's summary was shown, and no server rolls it back
	// before this instant: a confirmation before it sends the debit at
	// once. Zero: the intent is written with the confirmation.
	Intended time.Time
	// Due: the recovery entries of its games (recovery.go) are written by
	// the bet, due then — in the bet's own script, where the index shares
	// the player's Redis (no write of its own: one fsync a ticket less),
	// just before it in a Cluster. Zero: the caller reserved them (seamless
	// mode: with the debit's intent, before the debit).
	Due time.Time
}

// Paid is an acknowledged operator debit of a ticket: the balance it
// answered, and when it was sent (ms; orders answers that cross).
type Paid struct{ Balance, SentAt int64 }

// FairMoved refuses a ticket dealt from provably fair inputs that are no
// longer the player's current ones (a rotation, a new client seed, nonces
// taken by another session): nothing was done; deal again from these.
type FairMoved struct{ Current FairInputs }

func (e *FairMoved) Error() string {
	return "wallet: the provably fair inputs moved; deal the ticket again"
}

// GameIDs lists the ids of the ticket's games.
func (t Ticket) GameIDs() []string {
	ids := make([]string, len(t.Games))
	for i, g := range t.Games {
		ids[i] = g.ID
	}
	return ids
}

// Total is the ticket's stake in cents.
func (t Ticket) Total() int64 {
	var sum int64
	for _, g := range t.Games {
		sum += g.Outcome.Stake
	}
	return sum
}

// PlaceBet accepts a ticket: checks self-exclusion, the ticket maximum, the
// daily loss limit and the balance, then debits the total and records every
// game with its full outcome, journaled — or refuses it whole. fence is the
// caller's ownership token (see Claim). A retried ticket id returns the
// first result.
func (s *Store) PlaceBet(ctx context.Context, player, fence string, t Ticket) (balance int64, dup bool, err error) {
	if !ValidPlayer(player) {
		return 0, false, ErrBadPlayer
	}
	if len(t.Games) == 0 || t.ID == "" {
		return 0, false, errors.New("wallet: empty ticket")
	}
	k := keysOf(player)
	now := s.Now()
	for i, g := range t.Games {
		if g.Fair.Nonce != t.Games[0].Fair.Nonce+uint64(i) || g.Fair.ClientSeed != t.Games[0].Fair.ClientSeed {
			return 0, false, errors.New("wallet: a ticket's games take consecutive nonces on one client seed")
		}
	}
	keys := []string{k.acct(), k.limits(), k.op("t-" + t.ID), k.journal(), k.history(), k.owner(), k.open(), k.fair(), k.outbox()}
	debit, opBalance, opAt := "", int64(0), int64(0)
	if t.Paid != nil {
		debit, opBalance, opAt = debitField(t.ID), t.Paid.Balance, t.Paid.SentAt
	}
	var games []any
	digests := make([]gameDigest, len(t.Games)) // each record encoded once: stored, and digested into the journal
	for i, g := range t.Games {
		rec, err := json.Marshal(g)
		if err != nil {
			return 0, false, err
		}
		digests[i] = gameDigest{g.ID, digest(rec)}
		keys = append(keys, k.game(g.ID))
		games = append(games, g.ID, rec, s.seal.Tag(recordTagged(g.ID, string(rec))...))
	}
	reserve := []any{""} // the index entries' due time (ms), then their members
	if !t.Due.IsZero() {
		ids := t.GameIDs()
		if s.cluster() {
			// The index lives on another node: written first, durably.
			if err := s.Recovery().Reserve(ctx, player, ids, t.Due); err != nil {
				return 0, false, err
			}
		} else {
			keys = append(keys, openIndex)
			reserve = []any{t.Due.UnixMilli()}
			for _, id := range ids {
				reserve = append(reserve, indexMember(player, id))
			}
		}
	}
	interval, tolerance := s.cfg.BetRate.gcra()
	payload := struct {
		Ticket string       `json:"ticket"`
		Total  int64        `json:"total"`
		Games  []gameDigest `json:"games"`
	}{t.ID, t.Total(), digests}
	reply, err := s.sealed(ctx, player, "bet", payload, func(e journal.Entry) ([]any, error) {
		args := []any{now.UnixMilli(), t.Total(), s.cfg.TicketMax, fence, lossDay(now),
			now.Add(-s.cfg.History).UnixMilli(), interval.Milliseconds(), tolerance.Milliseconds(),
			hex.EncodeToString(t.Seed), t.Games[0].Fair.ClientSeed, t.Games[0].Fair.Nonce, s.cfg.LeaseTTL.Milliseconds(), debit, opBalance, opAt}
		args = append(append(append(args, journalArgs(e)...), len(reserve)), reserve...)
		return s.run(ctx, betScript, keys, append(args, games...)...)
	})
	if err != nil {
		return 0, false, err
	}
	switch str(reply, 0) {
	case "ok":
		return num(reply, 1), false, nil
	case "dup":
		return num(reply, 1), true, nil
	}
	if str(reply, 1) == "fair_moved" {
		seed, err := hex.DecodeString(str(reply, 2))
		if err != nil {
			return 0, false, err
		}
		return 0, false, &FairMoved{FairInputs{Seed: seed, Client: str(reply, 3), Next: uint64(num(reply, 4))}}
	}
	return 0, false, replyError(reply)
}

// Choice fields recorded on a game.
const (
	ChoiceContinue = "continue" // "1" continue, "0" stop
	ChoiceBox      = "box"      // "0".."4"
)

// Choice is a player's choice on a game: its field and value.
type Choice struct{ Field, Value string }

// entry is the choice's journal entry.
func (c Choice) entry(gameID string) link {
	return link{"choice", map[string]string{"game": gameID, c.Field: c.Value}}
}

// choiceTag is a choice's seal on the game record (the store's key).
func (s *Store) choiceTag(gameID string, c Choice) string {
	return s.seal.Tag(choiceTagged(gameID, c.Field, c.Value)...)
}

// Choose records a player's choice on an open game, journaled. Choices are
// final: a different second choice is refused, the same one is a no-op.
func (s *Store) Choose(ctx context.Context, player, fence, gameID, field, value string) error {
	if !ValidPlayer(player) {
		return ErrBadPlayer
	}
	k := keysOf(player)
	c := Choice{field, value}
	l := c.entry(gameID)
	reply, err := s.sealed(ctx, player, l.kind, l.payload, func(e journal.Entry) ([]any, error) {
		args := append([]any{fence, field, value}, journalArgs(e)...)
		args = append(args, s.choiceTag(gameID, c), s.Now().UnixMilli(), s.cfg.LeaseTTL.Milliseconds())
		return s.run(ctx, chooseScript, []string{k.acct(), k.journal(), k.game(gameID), k.owner()}, args...)
	})
	if err != nil {
		return err
	}
	if r := str(reply, 0); r == "ok" || r == "dup" {
		return nil
	}
	return replyError(reply)
}

// Settlement is the payout of one game.
type Settlement struct {
	Win     int64
	Balance int64
	Dup     bool // already settled before: nothing was paid this time
	Pending bool // seamless mode: the credit is not acknowledged yet (the outbox sends it)
}

// Settle pays a game exactly once. A second call for the same game pays
// nothing and returns the first win.
func (s *Store) Settle(ctx context.Context, player, fence, gameID string, res engine.Result) (Settlement, error) {
	return s.settle(ctx, player, fence, gameID, nil, res, nil)
}

// SettleChoosing records the game's last choice — one after which nothing
// more is shown: res is its outcome — and settles the game, in one script:
// as Choose then Settle, with one call and one write to Redis instead of
// two. A different choice recorded before is refused (ErrAlreadyChosen)
// and nothing is settled; the same one recorded before is not recorded
// again. A game settled already answers as Settle (Dup) if it carries this
// choice — a retry of this call — and ErrSettled if it was settled
// without it.
func (s *Store) SettleChoosing(ctx context.Context, player, fence, gameID string, last Choice, res engine.Result) (Settlement, error) {
	return s.settle(ctx, player, fence, gameID, &last, res, nil)
}

// SettleCrediting settles a game as Settle does (as SettleChoosing with a
// last choice) and, with the settlement, puts its credit in the player's
// outbox (seamless mode): the credit is then sent until the operator
// acknowledges it. A second call settles nothing and queues nothing.
func (s *Store) SettleCrediting(ctx context.Context, player, fence string, g *GameRecord, last *Choice, res engine.Result) (Settlement, Call, error) {
	now := s.nowMS()
	c := Call{Kind: KindCredit, Player: player, Tx: creditTx(g.ID), Round: g.Ticket, Amount: res.Win, DebitTx: DebitTx(g.Ticket),
		Game: g.ID, Since: now, Due: now}
	st, err := s.settle(ctx, player, fence, g.ID, last, res, &c)
	return st, c, err
}

func (s *Store) settle(ctx context.Context, player, fence, gameID string, last *Choice, res engine.Result, credit *Call) (Settlement, error) {
	if !ValidPlayer(player) {
		return Settlement{}, ErrBadPlayer
	}
	k := keysOf(player)
	now := s.Now()
	result, err := json.Marshal(res)
	if err != nil {
		return Settlement{}, err
	}
	payload := struct {
		Game   string `json:"game"`
		Win    int64  `json:"win"`
		Result string `json:"result_sha256"` // the result itself is stored once, in the game (gameDigest)
	}{gameID, res.Win, digest(result)}
	links := []link{{"settle", payload}}
	if last != nil {
		links = []link{last.entry(gameID), links[0]}
	}
	reply, err := s.sealedChain(ctx, player, links, func(es []journal.Entry) ([]any, error) {
		e := es[len(es)-1]
		args := append([]any{now.UnixMilli(), fence, gameID, res.Win, result, lossDay(now)}, journalArgs(e)...)
		args = append(args, s.seal.Tag(settleTagged(gameID, strconv.FormatInt(res.Win, 10), string(result))...), s.cfg.LeaseTTL.Milliseconds())
		if credit != nil {
			args = append(args, credit.field(), credit.encode())
		} else {
			args = append(args, "", "")
		}
		if last != nil {
			args = append(args, last.Field, last.Value, s.choiceTag(gameID, *last))
			args = append(args, journalArgs(es[0])...)
		} else {
			args = append(args, "")
		}
		return s.run(ctx, settleScript, []string{k.acct(), k.journal(), k.game(gameID), k.owner(), k.open(), k.outbox()}, args...)
	})
	if err != nil {
		return Settlement{}, err
	}
	switch str(reply, 0) {
	case "ok":
		return Settlement{Win: num(reply, 1), Balance: num(reply, 2)}, nil
	case "dup":
		return Settlement{Win: num(reply, 1), Balance: num(reply, 2), Dup: true}, nil
	}
	err = replyError(reply)
	if last != nil && errors.Is(err, ErrAlreadyChosen) && err.(*Error).Reason == last.Value {
		return s.settle(ctx, player, fence, gameID, nil, res, credit) // recorded before, as asked
	}
	return Settlement{}, err
}

// GameState is a stored game with its choices and, once settled, result.
type GameState struct {
	GameRecord
	Status   string `json:"status"` // open or settled
	Continue *bool  `json:"continue,omitempty"`
	// ContinueAt: when Continue was chosen (ms; 0 if unknown) — the
	// Stop-or-Continue draw is paced from it, also when resumed.
	ContinueAt int64          `json:"continue_at,omitempty"`
	Box        *int           `json:"box,omitempty"`
	Result     *engine.Result `json:"result,omitempty"`
	Win        int64          `json:"win"`
	Settled    int64          `json:"settled,omitempty"`
	Cursor     int64          `json:"cursor"` // pass as History's before to get the next page
}

// Choices returns the recorded choices, defaults for the rest (Stop, box 0).
func (g *GameState) Choices() engine.Choices {
	var c engine.Choices
	if g.Continue != nil {
		c.Continue = *g.Continue
	}
	if g.Box != nil {
		c.Box = *g.Box
	}
	return c
}

// What the seal tag of each stored part of a game covers — one layout for
// the scripts that write the tags and for sealedCopy, which checks them.
func recordTagged(id, rec string) []string          { return []string{"game", id, rec} }
func choiceTagged(id, field, value string) []string { return []string{"choice", id, field, value} }
func settleTagged(id, win, result string) []string  { return []string{"settle", id, win, result} }

// The journal seals each game by digest: a bet's entry names every game
// it placed with the SHA-256 of its record, a settlement's entry the
// SHA-256 of its result. The record and the result are written once, in
// the game's hash (tagged there, then archived with it); the journal,
// which every money operation appends to and which stays in Redis for the
// hot window, carries 64 characters for each instead of a copy. A game's
// hash therefore never expires: it leaves Redis only for the archive
// (tiers.go). Entries written by earlier builds carry the record and the
// result themselves, and verify reads both forms.
type gameDigest struct {
	ID  string `json:"id"`
	Rec string `json:"rec_sha256"`
}

// digest is the hex SHA-256 of b, as the journal names a record or result.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sealedCopy reports whether every part of a stored game — the record, each
// choice, the settlement — carries its valid seal tag.
func (s *Store) sealedCopy(id string, m map[string]string) bool {
	if !s.seal.ValidTag(m["tag"], recordTagged(id, m["rec"])...) {
		return false
	}
	for _, f := range []string{ChoiceContinue, ChoiceBox} {
		if v, ok := m[f]; ok && !s.seal.ValidTag(m[f+"_tag"], choiceTagged(id, f, v)...) {
			return false
		}
	}
	return m["status"] != "settled" || s.seal.ValidTag(m["stag"], settleTagged(id, m["win"], m["result"])...)
}

// ErrDamaged: a stored game record does not carry a valid seal — it was
// altered outside the server. It is never shown; verify says more.
var ErrDamaged = &Error{Code: CodeDamaged}

// parseGame reads a stored game, refusing one whose record or settlement
// is not what was sealed: a player is only ever shown what was sealed.
func (s *Store) parseGame(id string, m map[string]string) (*GameState, error) {
	if len(m) == 0 {
		return nil, ErrNoGame
	}
	if !s.sealedCopy(id, m) {
		return nil, fmt.Errorf("game %s: %w", id, ErrDamaged)
	}
	g := &GameState{Status: m["status"]}
	if err := json.Unmarshal([]byte(m["rec"]), &g.GameRecord); err != nil {
		return nil, err
	}
	if v, ok := m[ChoiceContinue]; ok {
		b := v == "1"
		g.Continue = &b
		g.ContinueAt, _ = strconv.ParseInt(m[ChoiceContinue+"_at"], 10, 64)
	}
	if v, ok := m[ChoiceBox]; ok {
		n, _ := strconv.Atoi(v)
		g.Box = &n
	}
	if v, ok := m["result"]; ok {
		g.Result = new(engine.Result)
		if err := json.Unmarshal([]byte(v), g.Result); err != nil {
			return nil, err
		}
	}
	g.Win, _ = strconv.ParseInt(m["win"], 10, 64)
	g.Settled, _ = strconv.ParseInt(m["settled"], 10, 64)
	g.Cursor, _ = strconv.ParseInt(m["cursor"], 10, 64) // its score in the history set
	return g, nil
}

// Game reads one game of a player.
func (s *Store) Game(ctx context.Context, player, gameID string) (*GameState, error) {
	if !ValidPlayer(player) {
		return nil, ErrBadPlayer
	}
	m, err := s.rdb.HGetAll(ctx, keysOf(player).game(gameID)).Result()
	if err != nil {
		return nil, err
	}
	if len(m) == 0 && s.cold != nil {
		cold, err := s.cold.GameFields(ctx, player, []string{gameID})
		if err != nil {
			return nil, err
		}
		m = cold[gameID]
	}
	return s.parseGame(gameID, m)
}

// OpenGames returns the player's unsettled games, oldest first (ticket
// order), for resuming.
func (s *Store) OpenGames(ctx context.Context, player string) ([]*GameState, error) {
	k := keysOf(player)
	ids, err := s.rdb.SMembers(ctx, k.open()).Result()
	if err != nil {
		return nil, err
	}
	games, err := s.games(ctx, k, ids)
	if err != nil {
		return nil, err
	}
	sortGames(games)
	return games, nil
}

// Games reads several games of a player in one round trip, in the order
// asked; games no longer stored are left out.
func (s *Store) Games(ctx context.Context, player string, ids []string) ([]*GameState, error) {
	if !ValidPlayer(player) {
		return nil, ErrBadPlayer
	}
	return s.games(ctx, keysOf(player), ids)
}

func (s *Store) games(ctx context.Context, k keys, ids []string) ([]*GameState, error) {
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, k.game(id))
	}
	if len(ids) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
	}
	found := make([]map[string]string, len(ids))
	var missing []string
	for i, c := range cmds {
		if found[i] = c.Val(); len(found[i]) == 0 {
			missing = append(missing, ids[i])
		}
	}
	if len(missing) > 0 && s.cold != nil {
		cold, err := s.cold.GameFields(ctx, k.player, missing)
		if err != nil {
			return nil, err
		}
		for i, id := range ids {
			if len(found[i]) == 0 {
				found[i] = cold[id]
			}
		}
	}
	var out []*GameState
	for i := range ids {
		g, err := s.parseGame(ids[i], found[i])
		if errors.Is(err, ErrNoGame) {
			continue // expired from history
		}
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

func sortGames(gs []*GameState) {
	for i := 1; i < len(gs); i++ {
		for j := i; j > 0 && less(gs[j], gs[j-1]); j-- {
			gs[j], gs[j-1] = gs[j-1], gs[j]
		}
	}
}

func less(a, b *GameState) bool {
	if a.Created != b.Created {
		return a.Created < b.Created
	}
	return a.Index < b.Index
}

// History returns up to limit games before the cursor (0 = from the newest),
// newest first, within the history window (31 days).
func (s *Store) History(ctx context.Context, player string, before int64, limit int) ([]*GameState, error) {
	if !ValidPlayer(player) {
		return nil, ErrBadPlayer
	}
	if limit <= 0 || limit > 100 {
		limit = 20
	}
	k := keysOf(player)
	max := "+inf"
	if before > 0 {
		max = "(" + strconv.FormatInt(before, 10)
	}
	min := strconv.FormatInt(s.Now().Add(-s.cfg.History).UnixMilli()*8, 10) // scores are ms × 8 + index
	ids, err := s.rdb.ZRevRangeByScore(ctx, k.history(), &redis.ZRangeBy{Min: min, Max: max, Count: int64(limit)}).Result()
	if err != nil {
		return nil, err
	}
	games, err := s.games(ctx, k, ids)
	if err != nil || len(ids) == limit || s.cold == nil {
		return games, err
	}
	// The page goes on in the archive, below the oldest hot game: cursors
	// order every game of both tiers the same way.
	if len(games) > 0 {
		before = games[len(games)-1].Cursor
	}
	more, err := s.cold.HistoryFields(ctx, player, before, s.Now().Add(-s.cfg.History).UnixMilli(), limit-len(ids))
	if err != nil {
		return nil, err
	}
	for _, c := range more {
		g, err := s.parseGame(c.ID, c.Fields)
		if err != nil {
			return nil, err
		}
		games = append(games, g)
	}
	return games, nil
}
