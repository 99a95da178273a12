package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reconciliation compares, for every seamless account, the sealed journal
// with what the operator acknowledged (wallet/outbox.go keeps the trace):
// every bet was debited and never rolled back (a bet lands only after its
// debit's acknowledgement, and only while the debit is in flight), every
// settlement was credited with its win, and what is still owed is listed.
type Reconciliation struct {
	Players     int       `json:"players"`
	Bets        int       `json:"bets"`
	Settlements int       `json:"settlements"`
	Credited    int       `json:"credited"` // settlements whose credit the operator acknowledged
	Unknown     int       `json:"unknown"`  // settlements whose game left Redis (archived): not checked here
	Owed        []Call    `json:"owed"`     // calls still owed (in flight, to roll back, to credit, a balance to read)
	Tally       OwedTally `json:"tally"`    // those, summed
	Problems    []string  `json:"problems"` // what does not reconcile
	Clean       bool      `json:"clean"`    // no problem and nothing owed
	// Accounts: each player's journal in sums, to hold against the
	// operator's own books: it must have debited Staked and credited Won.
	Accounts map[string]JournalSums `json:"accounts"`
}

// JournalSums is one player's sealed journal summed.
type JournalSums struct {
	Bets        int   `json:"bets"`
	Staked      int64 `json:"staked"`
	Settlements int   `json:"settlements"`
	Won         int64 `json:"won"`
}

// Reconcile builds the reconciliation of every seamless account (an audit
// tool: it scans).
func (s *Store) Reconcile(ctx context.Context) (Reconciliation, error) {
	r := Reconciliation{Owed: []Call{}, Problems: []string{}, Accounts: map[string]JournalSums{}}
	var players []string
	err := scanKeys(ctx, s.rdb, "{p:*}:acct", func(c *redis.Client, key string) error {
		if v, err := c.HGet(ctx, key, "seamless").Result(); err == nil && v == "1" {
			players = append(players, playerOf(key))
		} else if err != nil && err != redis.Nil {
			return err
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	for _, p := range players {
		if err := s.reconcilePlayer(ctx, p, &r); err != nil {
			return r, fmt.Errorf("player %s: %w", p, err)
		}
	}
	for _, j := range r.Accounts {
		r.Bets += j.Bets
		r.Settlements += j.Settlements
	}
	r.Tally = Tally(r.Owed, time.Now())
	r.Players = len(players)
	r.Clean = len(r.Problems) == 0 && len(r.Owed) == 0
	return r, nil
}

func (s *Store) reconcilePlayer(ctx context.Context, player string, r *Reconciliation) error {
	k := keysOf(player)
	entries, err := readJournal(ctx, s.rdb, k.journal())
	if err != nil {
		return err
	}
	owed, err := s.Outbox().Pending(ctx, player)
	if err != nil {
		return err
	}
	r.Owed = append(r.Owed, owed...)
	owedCredit := map[string]bool{}
	for _, c := range owed {
		if c.Kind == KindCredit {
			owedCredit[c.Game] = true
		}
	}
	pipe := s.rdb.Pipeline()
	type check struct {
		id  string
		win int64
		cmd any
	}
	var checks []check
	var sums JournalSums
	defer func() { r.Accounts[player] = sums }()
	for _, e := range entries {
		var b entryBody
		if json.Unmarshal([]byte(e.Data), &b) != nil {
			continue // verify reports it
		}
		switch b.Kind {
		case "bet":
			sums.Bets++
			sums.Staked += b.Body.Total
			checks = append(checks, check{b.Body.Ticket, 0, pipe.Exists(ctx, k.op(rollbackTx(b.Body.Ticket)))})
		case "settle":
			sums.Settlements++
			sums.Won += b.Body.Win
			checks = append(checks, check{b.Body.Game, b.Body.Win, pipe.HMGet(ctx, k.game(b.Body.Game), "status", "credited")})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return err
	}
	for _, c := range checks {
		switch cmd := c.cmd.(type) {
		case *redis.IntCmd:
			if cmd.Val() > 0 {
				r.Problems = append(r.Problems, fmt.Sprintf("player %s: ticket %s was played, and its debit rolled back", player, c.id))
			}
		case *redis.SliceCmd:
			v := cmd.Val()
			status, _ := v[0].(string)
			credited, hasCredit := v[1].(string)
			switch {
			case status == "":
				r.Unknown++ // archived with its game
			case hasCredit && credited == fmt.Sprint(c.win):
				r.Credited++
			case hasCredit:
				r.Problems = append(r.Problems, fmt.Sprintf("player %s: game %s won %d but %s was credited", player, c.id, c.win, credited))
			case !owedCredit[c.id]:
				r.Problems = append(r.Problems, fmt.Sprintf("player %s: game %s was settled (win %d) and neither credited nor owed", player, c.id, c.win))
			}
		}
	}
	return nil
}
