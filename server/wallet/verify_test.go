package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/engine"
	"keno/server/journal"
)

// An earlier build's journal carries each game's record and result
// themselves, not their digests, and each entry's prev: verify still
// reads it, catches an altered record against it, and (as then) lets a
// record past the history window have expired.
func TestVerifyReadsEarlierBuildsJournal(t *testing.T) {
	eachBackend(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		fence, tk := placedTicket(t, s, "old")
		for _, g := range tk.Games {
			res, _ := engine.Default().Settle(&g.Outcome, engine.Choices{})
			if _, err := s.Settle(ctx, "old", fence, g.ID, res); err != nil {
				t.Fatal(err)
			}
		}
		k := keysOf("old")
		stored, _ := s.rdb.XRange(ctx, k.journal(), "-", "+").Result()
		for _, m := range stored {
			if _, ok := m.Values["prev"]; ok {
				t.Fatalf("entry %s stores its prev, which is the entry before's hash", m.ID)
			}
		}
		for _, e := range mustJournal(t, s, "old") {
			if strings.Contains(e.Data, `"outcome"`) || strings.Contains(e.Data, `"hits"`) {
				t.Fatalf("entry %d carries a record or result, not its digest: %s", e.Seq, e.Data)
			}
		}
		rewriteAsEarlierBuild(t, s, "old")
		if _, damaged, err := s.Verify(ctx); err != nil || len(damaged) != 0 {
			t.Fatalf("an earlier build's intact journal reported: %+v %v", damaged, err)
		}

		first := k.game(tk.Games[0].ID)
		rec, _ := s.rdb.HGet(ctx, first, "rec").Result()
		s.rdb.HSet(ctx, first, "rec", strings.Replace(rec, `"stake":100`, `"stake":200`, 1))
		if _, damaged, _ := s.Verify(ctx); len(damaged) != 1 || !strings.Contains(fmt.Sprint(damaged[0].Problems), "record altered") {
			t.Fatalf("an altered record against an earlier build's journal: %+v", damaged)
		}

		s.rdb.Del(ctx, first)
		if _, damaged, _ := s.Verify(ctx); len(damaged) != 1 || !strings.Contains(fmt.Sprint(damaged[0].Problems), "settled within the history window, but its record is missing") {
			t.Fatalf("a record missing within the history window: %+v", damaged)
		}
		s.Now = func() time.Time { return time.Now().Add(s.cfg.History + 2*24*time.Hour) }
		if _, damaged, err := s.Verify(ctx); err != nil || len(damaged) != 0 {
			t.Fatalf("an earlier build's record expired past the history window reported: %+v %v", damaged, err)
		}
	})
}

func mustJournal(t *testing.T, s *Store, player string) []journal.Entry {
	t.Helper()
	entries, err := s.Journal(context.Background(), player)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// rewriteAsEarlierBuild seals the player's journal again as an earlier
// build wrote it: a bet's games and a settlement's result in full, and
// each entry's prev stored.
func rewriteAsEarlierBuild(t *testing.T, s *Store, player string) {
	ctx := context.Background()
	k := keysOf(player)
	msgs, err := s.rdb.XRange(ctx, k.journal(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	s.rdb.Del(ctx, k.journal())
	var head journal.Head
	for _, m := range msgs {
		var d struct {
			Kind string                     `json:"kind"`
			Body map[string]json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal([]byte(m.Values["data"].(string)), &d); err != nil {
			t.Fatal(err)
		}
		switch d.Kind {
		case "bet":
			var games []gameDigest
			json.Unmarshal(d.Body["games"], &games)
			var recs []json.RawMessage
			for _, g := range games {
				recs = append(recs, json.RawMessage(s.rdb.HGet(ctx, k.game(g.ID), "rec").Val()))
			}
			d.Body["games"], _ = json.Marshal(recs)
		case "settle":
			var game string
			json.Unmarshal(d.Body["game"], &game)
			d.Body["result"] = json.RawMessage(s.rdb.HGet(ctx, k.game(game), "result").Val())
			delete(d.Body, "result_sha256")
		}
		e, err := s.seal.Seal(head, d.Kind, d.Body)
		if err != nil {
			t.Fatal(err)
		}
		m.Values["prev"], m.Values["hash"], m.Values["mac"], m.Values["data"] = e.Prev, e.Hash, e.MAC, e.Data
		if err := s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.journal(), ID: m.ID, Values: m.Values}).Err(); err != nil {
			t.Fatal(err)
		}
		head = journal.Head{Hash: e.Hash, Seq: e.Seq}
	}
	s.rdb.HSet(ctx, k.acct(), "jhead", head.Hash)
}
