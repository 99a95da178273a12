package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"keno/engine"
)

// par prints the exact RTP report of the embedded table.
func par(args []string) error {
	fs := flag.NewFlagSet("par", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON (exact rationals and decimals)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	start := time.Now()
	rep := engine.Default().ComputePAR()
	took := time.Since(start)
	if *asJSON {
		return rep.WriteJSON(os.Stdout)
	}
	fmt.Printf("Keno Mystères — exact PAR sheet, table version %d (computed in %v)\n", rep.Version, took.Round(time.Millisecond))
	return rep.WriteText(os.Stdout)
}

// simulate plays real games through Deal+Settle and compares with PAR.
func simulate(args []string) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	n := fs.Int("n", 1_000_000, "games per pick count and strategy")
	stake := fs.Int64("stake", 100, "stake in cents")
	z := fs.Float64("z", 3.29, "confidence bound in standard errors (3.29 ≈ 99.9%)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 2 {
		return fmt.Errorf("-n must be at least 2")
	}
	src := engine.NewSecureSource()
	failed := 0
	for p := engine.MinPicks; p <= engine.MaxPicks; p++ {
		for _, cont := range []bool{false, true} {
			r, err := engine.Default().Simulate(src, p, *stake, *n, cont)
			if err != nil {
				return err
			}
			verdict := "ok"
			if !r.Within(*z) {
				verdict = "OUTSIDE"
				failed++
			}
			strategy := "stop    "
			if cont {
				strategy = "continue"
			}
			fmt.Printf("%s %s  [%s]\n", strategy, r, verdict)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of 12 observed RTPs outside ±%.2f standard errors", failed, *z)
	}
	return nil
}
