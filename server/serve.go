package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"keno/server/app"
	"keno/server/archive"
	"keno/server/journal"
	"keno/server/wallet"
)

// serve runs the game server until SIGINT/SIGTERM, then shuts down
// gracefully (running reveals reach a pause; open games go to recovery).
func serve(args []string) error {
	cfg, err := app.ParseConfig(args)
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		// Most allocations are short-lived messages: collecting half as
		// often saves CPU for little memory (idle players hold no garbage).
		debug.SetGCPercent(200)
	}
	a, err := app.New(cfg)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		a.Close()
		return fmt.Errorf("ADDR: %w", err)
	}
	admin, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		l.Close()
		a.Close()
		return fmt.Errorf("ADMIN_ADDR: %w", err)
	}
	a.Log.Info().Str("play", fmt.Sprintf("http://%s/", l.Addr())).Str("ops", fmt.Sprintf("http://%s/ops.html#token=%s", admin.Addr(), opsHint(cfg))).
		Msg("Keno Mystères: play and live-ops addresses")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return a.Run(ctx, l, admin)
}

// archiveOnly runs the archiver alone (no listener): a dedicated process
// beside servers started with ARCHIVER=off, or one more contender for the
// lease. It stops on SIGINT/SIGTERM; killed, it loses nothing.
func archiveOnly(args []string) error {
	cfg, err := app.ParseConfig(args)
	if err != nil {
		return err
	}
	if cfg.ArchiveURL == "" {
		return fmt.Errorf("archive needs ARCHIVE_URL")
	}
	cfg.Archiver = true
	a, err := app.New(cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a.Log.Info().Str("id", cfg.ServerID).Msg("archiver running alone")
	a.Archiver.Run(ctx)
	return nil
}

// opsHint shows the dev ops token; a production token is never printed.
func opsHint(cfg app.Config) string {
	if cfg.Mode == "dev" {
		return cfg.OpsToken
	}
	return "<KENO_OPS_TOKEN>"
}

// verify holds every player's account and game records to the sealed
// journal (wallet.Store.Verify) and checks the books; it exits non-zero
// on any damage.
func verify(args []string) error {
	var export string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-export" || args[i] == "--export" {
			export = args[i+1]
			args = append(args[:i:i], args[i+2:]...)
			break
		}
	}
	cfg, err := toolConfig(args)
	if err != nil {
		return err
	}
	if export != "" {
		return verifyExport(export, cfg)
	}
	store, done, err := toolStore("verify", cfg)
	if err != nil {
		return err
	}
	defer done()
	if cfg.ArchiveURL != "" {
		// Both tiers: the chain runs from the archive into Redis.
		arch, err := archive.Open(context.Background(), cfg.ArchiveURL)
		if err != nil {
			return fmt.Errorf("ARCHIVE_URL: %w", err)
		}
		defer arch.Close()
		store.SetCold(arch)
	}
	checked, damaged, err := store.Verify(context.Background())
	if err != nil {
		return err
	}
	for _, d := range damaged {
		fmt.Printf("player %s (%d entries):\n", d.Player, d.Entries)
		for _, p := range d.Problems {
			fmt.Printf("  %s\n", p)
		}
	}
	books, err := store.Books(context.Background())
	if err != nil {
		return err
	}
	fmt.Printf("players: %d checked (journal, its tail, account, game records), %d damaged\nbooks: %d players, balances %d + house %d = deposits %d − withdrawals %d: %s\n",
		checked, len(damaged), books.Players, books.Balances, books.House, books.Deposited, books.Withdrawn, verdict(books.Balanced()))
	if len(damaged) > 0 || !books.Balanced() {
		return fmt.Errorf("verification failed")
	}
	return nil
}

// toolConfig reads an audit subcommand's configuration. The audits only
// read: without MODE they use the dev keys unless KENO_SEAL_KEY (or
// -seal-key) names the real one.
func toolConfig(args []string) (app.Config, error) {
	if os.Getenv("MODE") == "" {
		args = append([]string{"-mode", "dev"}, args...)
	}
	return app.ParseConfig(args)
}

// toolStore opens the wallet of REDIS_URL for an audit subcommand; done
// closes it.
func toolStore(tool string, cfg app.Config) (*wallet.Store, func(), error) {
	if cfg.RedisURL == "" {
		return nil, nil, fmt.Errorf("%s needs REDIS_URL (the embedded Redis of a dev server is not reachable)", tool)
	}
	rdb, _, err := app.Connect(cfg.RedisURL, false)
	if err != nil {
		return nil, nil, err
	}
	store, err := app.NewStore(rdb, cfg)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return store, func() { rdb.Close() }, nil
}

// verifyExport checks an export of sealed entries offline (no Redis, no
// database): hashes, seals, and each player's run without gaps.
func verifyExport(path string, cfg app.Config) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	seal, err := journal.NewSealer([]byte(cfg.SealKey))
	if err != nil {
		return err
	}
	n, problems, err := archive.VerifyExport(f, seal)
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Println(" ", p)
	}
	fmt.Printf("export %s: %d entries, %d problems\n", path, n, len(problems))
	if len(problems) > 0 {
		return fmt.Errorf("verification failed")
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "balanced"
	}
	return "NOT BALANCED"
}
