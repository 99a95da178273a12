package archive

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"keno/engine"
	"keno/server/archive/pgtest"
	"keno/server/metrics"
	"keno/server/redistest"
	"keno/server/wallet"
)

// BenchmarkArchiver: how fast one archiver moves settled games (each with
// its bet and settlement entries and ledger rows) from a local redis-server
// into a local PostgreSQL, checks included. Goal ≥ 5 000 games/s (8× the
// rated 640 games/s), so the archive never falls behind. Run:
//
//	go test -run '^$' -bench Archiver -benchtime 3x ./server/archive/
func BenchmarkArchiver(b *testing.B) {
	rs := redistest.Start(b, "--appendfsync", "everysec")
	pg := pgtest.Start(b)
	ctx := context.Background()
	cfg := wallet.DefaultConfig()
	cfg.BetRate = wallet.Rate{} // the benchmark bets faster than people
	s, err := wallet.New(rs.Client(), []byte("bench seal key, 32 bytes long.."), cfg)
	if err != nil {
		b.Fatal(err)
	}
	arch, err := Open(ctx, pg.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer arch.Close()
	a := &Archiver{Store: s, Archive: arch, Hot: 0, Batch: 200, Log: zerolog.Nop(), Metrics: metrics.New(), ID: "bench"}
	const players, perPlayer = 200, 50
	var games, entries int
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		play(b, s, fmt.Sprintf("r%d-", i), players, perPlayer)
		time.Sleep(5 * time.Millisecond) // every entry strictly before the cutoff
		b.StartTimer()
		t0 := time.Now()
		st, err := a.Pass(ctx)
		elapsed += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if st.Games != players*perPlayer {
			b.Fatalf("moved %d games, %d were played", st.Games, players*perPlayer)
		}
		games, entries = games+st.Games, entries+st.Entries
	}
	b.ReportMetric(float64(games)/elapsed.Seconds(), "games/s")
	b.ReportMetric(float64(entries)/elapsed.Seconds(), "entries/s")
}

// play places and settles perPlayer single-game tickets for each player.
func play(b *testing.B, s *wallet.Store, prefix string, players, perPlayer int) {
	ctx := context.Background()
	tab := engine.Default()
	var wg sync.WaitGroup
	for p := 0; p < players; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			player := fmt.Sprint(prefix, p)
			if _, err := s.Deposit(ctx, player, "d", 100_000); err != nil {
				b.Error(err)
				return
			}
			fence, _ := s.Claim(ctx, player, time.Hour)
			picks, _ := engine.ValidatePicks([]int{2, 7, 11, 19, 23, 31})
			for i := 0; i < perPlayer; i++ {
				in, err := s.Fair(ctx, player)
				if err != nil {
					b.Error(err)
					return
				}
				o, _ := tab.Deal(engine.NewFairSource(in.Seed, in.Client, in.Next), picks, 100)
				id := fmt.Sprintf("%s-%d", player, i)
				tk := wallet.Ticket{ID: id, Seed: in.Seed, Games: []wallet.GameRecord{{ID: id, Ticket: id, Grids: 1, Player: player, Created: time.Now().UnixMilli(),
					Fair: wallet.Fairness{Commit: in.Public().Commit, ClientSeed: in.Client, Nonce: in.Next}, Outcome: o}}}
				if _, _, err := s.PlaceBet(ctx, player, fence, tk); err != nil {
					b.Error(err)
					return
				}
				res, _ := tab.Settle(&o, engine.Choices{})
				if _, err := s.Settle(ctx, player, fence, id, res); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
