package engine

import (
	"fmt"
	"math"
	"math/big"
)

// Strategy picks the player's choices once the main game is known.
type Strategy func(m Main, src Source) Choices

// AlwaysStop keeps the main gain and opens the first box.
func AlwaysStop(Main, Source) Choices { return Choices{} }

// AlwaysContinue plays Stop-or-Continue whenever offered, first box.
func AlwaysContinue(Main, Source) Choices { return Choices{Continue: true} }

// SimResult compares a simulated RTP with the exact one.
type SimResult struct {
	Picks  int
	Stake  int64
	Games  int
	RTP    float64 // observed mean win / stake
	StdErr float64 // standard error of RTP
	Exact  float64
	Var    float64 // observed variance of win/stake
	Z      float64 // (observed − exact) / stderr
}

// Within reports whether the observed RTP lies within z standard errors.
func (s SimResult) Within(z float64) bool { return math.Abs(s.Z) <= z }

func (s SimResult) String() string {
	return fmt.Sprintf("picks=%d stake=%d games=%d observed=%.4f%% exact=%.4f%% ±%.4f%% (1σ) z=%+.2f",
		s.Picks, s.Stake, s.Games, 100*s.RTP, 100*s.Exact, 100*s.StdErr, s.Z)
}

// Simulate plays n games of p quick-picked numbers through the real Deal and
// Settle code and measures the RTP against the exact figure (rtp_stop or
// rtp_continue of the PAR sheet, chosen by cont).
func (t *Table) Simulate(src Source, p int, stake int64, n int, cont bool) (SimResult, error) {
	strategy := AlwaysStop
	if cont {
		strategy = AlwaysContinue
	}
	var sum, sumSq float64
	for i := 0; i < n; i++ {
		q, err := QuickPick(src, p)
		if err != nil {
			return SimResult{}, err
		}
		picks, _ := ValidatePicks(q)
		o, err := t.Deal(src, picks, stake)
		if err != nil {
			return SimResult{}, err
		}
		c := strategy(t.Evaluate(&o), src)
		c.Box = int(Uniform(src, ExtraBoxes)) // boxes are i.i.d.; any choice is fair
		r, err := t.Settle(&o, c)
		if err != nil {
			return SimResult{}, err
		}
		x := float64(r.Win) / float64(stake)
		sum += x
		sumSq += x * x
	}
	mean := sum / float64(n)
	variance := (sumSq/float64(n) - mean*mean) * float64(n) / float64(n-1)
	sheet := t.par(p, stake)
	exact := sheet.RTPStop
	if cont {
		exact = sheet.RTPContinue
	}
	ex, _ := new(big.Rat).Set(exact).Float64()
	se := math.Sqrt(variance / float64(n))
	return SimResult{Picks: p, Stake: stake, Games: n, RTP: mean, StdErr: se, Exact: ex, Var: variance, Z: (mean - ex) / se}, nil
}
