package main

// The seamless mode's subcommands: reconcile, and a reference operator wallet.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"keno/server/operator"
	"keno/server/wallet"
)

// reconcile compares the journal of every seamless account with what the
// operator acknowledged, and lists the calls still owed.
func reconcile(args []string) error {
	asJSON := false
	for i, a := range args {
		if a == "-json" || a == "--json" {
			asJSON, args = true, append(args[:i:i], args[i+1:]...)
			break
		}
	}
	cfg, err := toolConfig(args)
	if err != nil {
		return err
	}
	store, done, err := toolStore("reconcile", cfg)
	if err != nil {
		return err
	}
	defer done()
	r, err := store.Reconcile(context.Background())
	if err != nil {
		return err
	}
	if asJSON {
		json.NewEncoder(os.Stdout).Encode(r)
	} else {
		fmt.Printf("seamless players: %d; bets %d, settlements %d: %d credited and acknowledged, %d archived (not checked here)\n",
			r.Players, r.Bets, r.Settlements, r.Credited, r.Unknown)
		fmt.Printf("owed to the operator: %d calls (%d retried, %d failed %d times or more)\n", len(r.Owed), r.Tally.Retried, r.Tally.Failing, wallet.FailingTries)
		for _, c := range r.Owed {
			fmt.Printf("  %-8s %s player %s amount %d tries %d since %s %s\n", c.Kind, c.Tx, c.Player, c.Amount, c.Tries,
				time.UnixMilli(c.Since).UTC().Format(time.RFC3339), c.Last)
		}
		for _, p := range r.Problems {
			fmt.Println("MISMATCH:", p)
		}
		fmt.Println("reconcile:", map[bool]string{true: "clean", false: "NOT clean"}[r.Clean])
	}
	if len(r.Problems) > 0 {
		return fmt.Errorf("%d mismatches between the journal and the operator's acknowledgements", len(r.Problems))
	}
	return nil
}

// referenceOperator serves the reference operator wallet
// (protocol/OPERATOR.md) with injectable faults, for tests and load runs.
func referenceOperator(args []string) error {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9400", "listen address (loopback)")
	key := fs.String("key", envOr("OPERATOR_KEY", "dev-operator-key-not-for-production"), "the HMAC key calls are signed with (OPERATOR_KEY)")
	fund := fs.Int64("fund", 50_000, "cents a player's account opens with (a deposit)")
	var f operator.Faults
	fs.Float64Var(&f.Errors, "errors", 0, "share of calls answered 500, not done")
	fs.Float64Var(&f.Timeouts, "timeouts", 0, "share of calls that hang past the caller's timeout (done or not, at random)")
	fs.Float64Var(&f.Lost, "lost", 0, "share of calls done and then left without an answer (connection dropped)")
	fs.Float64Var(&f.Duplicates, "duplicates", 0, "share of calls delivered twice")
	fs.Float64Var(&f.Slow, "slow", 0, "share of calls answered late (-slow-by)")
	fs.DurationVar(&f.SlowBy, "slow-by", 500*time.Millisecond, "a slow answer's delay")
	fs.DurationVar(&f.Hang, "hang", 3*time.Second, "a timed-out call's hang")
	fs.DurationVar(&f.Latency, "latency", 0, "every answer's delay")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	ref := operator.NewReference([]byte(*key), *fund, f)
	srv := &http.Server{Handler: ref, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(os.Stderr, "reference operator wallet on http://%s (faults %+v)\n", ln.Addr(), f)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
