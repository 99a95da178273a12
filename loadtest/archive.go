package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/server/archive"
	"keno/server/archive/pgtest"
)

// With -archive the load tester spawns a PostgreSQL beside Redis, runs
// the servers with the archive (HOT_WINDOW = -hot-window) and one
// dedicated archiver process (`keno-server archive`), can stop PostgreSQL
// for a while mid-run (-pg-outage) and SIGKILL the archiver (-kill-archiver),
// and after the run waits two hot windows and checks that everything old
// enough moved exactly once and that Redis memory per player stayed small.

type archiveSetup struct {
	baseline  int64 // Redis's used_memory before any player
	pg        *pgtest.Server
	hot       time.Duration
	serverBin string
	redisURL  string
	archiver  *exec.Cmd
}

func startArchive(hot time.Duration) (*archiveSetup, error) {
	pg, err := pgtest.New()
	if err != nil {
		return nil, fmt.Errorf("start PostgreSQL (make deps installs it): %w", err)
	}
	fmt.Fprintf(os.Stderr, "spawned PostgreSQL :%d (archive, hot window %v)\n", pg.Port, hot)
	return &archiveSetup{pg: pg, hot: hot}, nil
}

// serverArgs are what each spawned server adds: the archive, but no
// archiver of its own (the dedicated one is the one killed).
func (a *archiveSetup) serverArgs() []string {
	return []string{"-archive", a.pg.URL(), "-hot-window", a.hot.String(), "-archiver=false"}
}

// measureBaseline notes Redis's used_memory before any player.
func (a *archiveSetup) measureBaseline(addr string) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	if info, err := rdb.InfoMap(context.Background(), "memory").Result(); err == nil {
		fmt.Sscan(info["Memory"]["used_memory"], &a.baseline)
	}
}

func (a *archiveSetup) startArchiver() error {
	a.archiver = exec.Command(a.serverBin, "archive", "-mode", "dev", "-redis", a.redisURL, "-archive", a.pg.URL(),
		"-hot-window", a.hot.String(), "-archive-every", "1s", "-log", "json", "-log-level", "warn", "-server-id", "archiver")
	a.archiver.Stdout, a.archiver.Stderr = os.Stderr, os.Stderr
	return a.archiver.Start()
}

// killArchiver SIGKILLs the archiver mid-batch, as a crash would, and
// starts another (which takes the lease once the dead one's expires).
func (a *archiveSetup) killArchiver() error {
	a.archiver.Process.Kill()
	a.archiver.Wait()
	return a.startArchiver()
}

func (a *archiveSetup) stop() {
	if a.archiver != nil && a.archiver.Process != nil {
		a.archiver.Process.Signal(os.Interrupt)
		a.archiver.Wait()
	}
	a.pg.Close()
}

// faults runs the outage and the kills during the run, spread over it.
func (a *archiveSetup) faults(ctx context.Context, c *config) func() (outages, kills int) {
	done := make(chan [2]int, 1)
	go func() {
		var n [2]int
		run := c.ramp + c.duration
		if c.pgOutage > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(run / 3):
				fmt.Fprintf(os.Stderr, "\nPostgreSQL stopped for %v\n", c.pgOutage)
				a.pg.Stop()
				time.Sleep(c.pgOutage)
				if err := a.pg.Start(); err != nil {
					fmt.Fprintln(os.Stderr, "restart PostgreSQL:", err)
				}
				n[0]++
				fmt.Fprintln(os.Stderr, "\nPostgreSQL back")
			}
		}
		for i := 0; i < c.killArchiver; i++ {
			select {
			case <-ctx.Done():
			case <-time.After(run / time.Duration(2*(c.killArchiver+1))):
				if err := a.killArchiver(); err != nil {
					fmt.Fprintln(os.Stderr, "restart the archiver:", err)
				}
				n[1]++
				fmt.Fprintf(os.Stderr, "\narchiver killed (-9) and restarted (%d of %d)\n", n[1], c.killArchiver)
			}
		}
		done <- n
	}()
	return func() (int, int) { n := <-done; return n[0], n[1] }
}

// ArchiveCheck is what the report says of the two tiers after the wait.
type ArchiveCheck struct {
	HotWindow        string  `json:"hot_window"`
	Waited           float64 `json:"waited_s"`
	PGOutages        int     `json:"pg_outages"`
	ArchiverKills    int     `json:"archiver_kills"`
	Entries          int64   `json:"archived_entries"`
	Games            int64   `json:"archived_games"`
	Ledger           int64   `json:"archived_ledger_rows"`
	RedisJournalLeft int64   `json:"redis_journal_entries_left"`
	RedisGamesLeft   int64   `json:"redis_game_records_left"`
	RedisUsedMemory  int64   `json:"redis_used_memory_bytes"`
	RedisPlayers     int64   `json:"redis_players"`
	BytesPerPlayer   float64 `json:"redis_bytes_per_player"`
	// Without Redis's own baseline (its used_memory before any player).
	RedisBaseline int64            `json:"redis_baseline_bytes"`
	PlayerBytes   float64          `json:"redis_bytes_per_player_net"`
	OnePlayer     map[string]int64 `json:"one_players_keys"` // MEMORY USAGE of each key of one player
	Dataset       int64            `json:"redis_used_memory_dataset"`
	Clients       int64            `json:"redis_mem_clients_normal"`
	OtherKeys     map[string]int64 `json:"other_keys"` // keys outside the players', by prefix
	MemoryStats   string           `json:"redis_memory_stats"`
	PGBytes       int64            `json:"pg_database_bytes"`
	KeyBytes      float64          `json:"redis_key_bytes_per_player"` // Σ MEMORY USAGE of the players' keys / players
}

// check waits two hot windows after the run, then counts both tiers.
func (a *archiveSetup) check(redisAddr string) (*ArchiveCheck, error) {
	wait := 2*a.hot + 5*time.Second
	fmt.Fprintf(os.Stderr, "waiting %v (two hot windows) for the archive...\n", wait)
	time.Sleep(wait)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	ac := &ArchiveCheck{HotWindow: a.hot.String(), Waited: wait.Seconds()}
	var one string // a player whose keys are itemised
	var keyBytes int64
	ac.OtherKeys = map[string]int64{}
	it := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for it.Next(ctx) {
		k := it.Val()
		if !strings.HasPrefix(k, "{p:") {
			prefix, _, _ := strings.Cut(k, ":")
			if p2, _, ok := strings.Cut(strings.TrimPrefix(k, prefix+":"), ":"); ok {
				prefix += ":" + p2
			}
			ac.OtherKeys[prefix]++
			continue
		}
		n, _ := rdb.MemoryUsage(ctx, k).Result()
		keyBytes += n
		switch {
		case strings.HasSuffix(k, "}:acct"):
			ac.RedisPlayers++
			if one == "" {
				one = strings.TrimSuffix(strings.TrimPrefix(k, "{p:"), "}:acct")
			}
		case strings.HasSuffix(k, "}:journal"):
			n, _ := rdb.XLen(ctx, k).Result()
			ac.RedisJournalLeft += n
		case strings.Contains(k, "}:game:"):
			ac.RedisGamesLeft++
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	info, err := rdb.InfoMap(ctx, "memory").Result()
	if err != nil {
		return nil, err
	}
	fmt.Sscan(info["Memory"]["used_memory"], &ac.RedisUsedMemory)
	fmt.Sscan(info["Memory"]["used_memory_dataset"], &ac.Dataset)
	fmt.Sscan(info["Memory"]["mem_clients_normal"], &ac.Clients)
	if st, err := rdb.Do(ctx, "MEMORY", "STATS").Result(); err == nil {
		ac.MemoryStats = fmt.Sprint(st)
	}
	ac.RedisBaseline = a.baseline
	if ac.RedisPlayers > 0 {
		ac.KeyBytes = float64(keyBytes) / float64(ac.RedisPlayers)
		ac.BytesPerPlayer = float64(ac.RedisUsedMemory) / float64(ac.RedisPlayers)
		ac.PlayerBytes = float64(ac.RedisUsedMemory-a.baseline) / float64(ac.RedisPlayers)
	}
	if one != "" {
		ac.OnePlayer = map[string]int64{}
		keys, _ := rdb.Keys(ctx, "{p:"+one+"}:*").Result()
		for _, k := range keys {
			n, _ := rdb.MemoryUsage(ctx, k).Result()
			ac.OnePlayer[strings.TrimPrefix(k, "{p:"+one+"}:")] = n
		}
	}
	arch, err := archive.Open(ctx, a.pg.URL())
	if err != nil {
		return nil, err
	}
	defer arch.Close()
	n, err := arch.Count(ctx)
	if err != nil {
		return nil, err
	}
	ac.Entries, ac.Games, ac.Ledger, ac.PGBytes = n.Entries, n.Games, n.Ledger, n.Bytes
	return ac, nil
}
