package archive

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"keno/server/journal"
	"keno/server/metrics"
	"keno/server/wallet"
)

// Archiver moves what is older than the hot window from Redis to the
// archive. Every server runs one; a Redis lease lets exactly one work at a
// time (the others wait to take over), so no two ever move a player's keys
// together. A pass walks every player: read what may move (checked against
// the archived chain), commit it here, then trim Redis. A crash at any
// instant loses nothing (Redis is trimmed only after the commit) and
// duplicates nothing (every row is keyed; a checkpoint only moves forward).
type Archiver struct {
	Store   *wallet.Store
	Archive *Archive
	Hot     time.Duration // what is younger stays in Redis
	Every   time.Duration // pause between passes
	Batch   int           // players per transaction
	Workers int           // transactions at once (default 4): PostgreSQL works on several cores
	Log     zerolog.Logger
	Metrics *metrics.Metrics
	ID      string // lease holder's name (server id)
}

// LeaseKey is the Redis key of the archiver's lease.
const LeaseKey = "keno:archiver:lease"

// Run archives until ctx ends.
func (a *Archiver) Run(ctx context.Context) {
	ttl := 15 * time.Second
	caughtUp := time.Now() // the start of the last pass that moved everything due
	for {
		if a.Store.HoldLease(ctx, LeaseKey, a.ID, ttl) {
			start := time.Now()
			st, err := a.Pass(ctx)
			lag := 0.0
			if err != nil && ctx.Err() == nil {
				a.Metrics.ArchiveFailures.Inc()
				a.Log.Warn().Err(err).Int("backlog", st.Backlog).Msg("archive pass failed; Redis keeps everything until the archive is back")
				lag = time.Since(caughtUp).Seconds()
			} else {
				caughtUp = start
			}
			a.Metrics.ArchiveBacklog.Set(float64(st.Backlog))
			a.Metrics.ArchiveLag.Set(lag)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.Every):
		}
	}
}

// PassStats is what one pass did.
type PassStats struct {
	Players, Entries, Games, Ledger int
	Backlog                         int // entries due that could not move
}

// Pass moves everything due now, player by player, a batch of players per
// transaction.
func (a *Archiver) Pass(ctx context.Context) (PassStats, error) {
	var st PassStats
	cutoff := a.Store.Now().Add(-a.Hot)
	batch := a.Batch
	if batch <= 0 {
		batch = 200
	}
	workers := a.Workers
	if workers <= 0 {
		workers = 4
	}
	// Batches of players go to a few workers, each its own transaction:
	// a player is in one batch only, so no two workers touch its keys.
	batches := make(chan []string)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for players := range batches {
				var bs PassStats
				err := a.move(ctx, players, cutoff, &bs)
				mu.Lock()
				st.add(bs)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	var players []string
	err := a.Store.Players(ctx, func(p string) error {
		players = append(players, p)
		if len(players) >= batch {
			batches <- players
			players = nil
		}
		return ctx.Err()
	})
	if len(players) > 0 {
		batches <- players
	}
	close(batches)
	wg.Wait()
	return st, errors.Join(append(errs, err)...)
}

func (s *PassStats) add(o PassStats) {
	s.Players, s.Entries, s.Games, s.Ledger, s.Backlog = s.Players+o.Players, s.Entries+o.Entries, s.Games+o.Games, s.Ledger+o.Ledger, s.Backlog+o.Backlog
}

// move archives one batch of players: read, commit, trim.
func (a *Archiver) move(ctx context.Context, players []string, cutoff time.Time, st *PassStats) error {
	heads, err := a.Archive.Heads(ctx, players)
	if err != nil {
		return err
	}
	var ms []*wallet.Movable
	var errs []error
	for _, p := range players {
		for {
			m, err := a.Store.Movable(ctx, p, heads[p], cutoff, 2000)
			if err != nil {
				if errors.Is(err, wallet.ErrChain) {
					a.Metrics.ArchiveFailures.Inc()
					a.Log.Error().Err(err).Str("player", p).Msg("not archived: the journal does not continue the archive; run keno-server verify")
					break
				}
				errs = append(errs, err)
				break
			}
			if m.Empty() {
				break
			}
			ms = append(ms, m)
			st.Backlog += len(m.Entries)
			if len(m.Entries) < 2000 {
				break
			}
			// A player with more than one read's worth: commit this part first.
			if err := a.commit(ctx, ms, st); err != nil {
				return err
			}
			ms = ms[:0]
			heads[p] = lastHead(m, heads[p])
		}
	}
	if err := a.commit(ctx, ms, st); err != nil {
		return err
	}
	st.Players += len(players)
	return errors.Join(errs...)
}

func lastHead(m *wallet.Movable, h journal.Head) journal.Head {
	if n := len(m.Entries); n > 0 {
		return journal.Head{Seq: m.Entries[n-1].Seq, Hash: m.Entries[n-1].Hash}
	}
	return h
}

func (a *Archiver) commit(ctx context.Context, ms []*wallet.Movable, st *PassStats) error {
	if len(ms) == 0 {
		return nil
	}
	if err := a.Archive.Save(ctx, ms, a.Store.CheckpointTag); err != nil {
		return err
	}
	for _, m := range ms {
		// Only now may Redis forget: the archive has it.
		if err := a.Store.Trim(ctx, m); err != nil {
			return err
		}
		st.Entries += len(m.Entries)
		st.Games += len(m.Games)
		st.Ledger += len(m.Ledger)
		st.Backlog -= len(m.Entries)
		a.Metrics.ArchiveMoved.WithLabelValues("entries").Add(float64(len(m.Entries)))
		a.Metrics.ArchiveMoved.WithLabelValues("games").Add(float64(len(m.Games)))
		a.Metrics.ArchiveMoved.WithLabelValues("ledger").Add(float64(len(m.Ledger)))
	}
	return nil
}
