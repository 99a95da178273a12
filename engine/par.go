package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"text/tabwriter"
)

// PAR is the exact probability-and-return sheet of one pick count at one
// stake, computed with rational arithmetic over every distinct game state.
type PAR struct {
	Picks int   `json:"picks"`
	Stake int64 `json:"stake_cents"`
	// PMatch[m]: probability of m picks among the 10 numbers.
	PMatch []*big.Rat `json:"p_match"`
	// HitFrequency: probability of a main-table prize (before mystery effects).
	HitFrequency *big.Rat `json:"hit_frequency"`
	// PWin: probability that the game pays anything, always stopping.
	PWin *big.Rat `json:"p_win"`
	// Return to player as a fraction of the stake.
	RTPMain     *big.Rat `json:"rtp_main"`      // prize table alone, no mystery effects
	RTPMystery  *big.Rat `json:"rtp_mystery"`   // with gold doubling and red loss
	RTPExtra    *big.Rat `json:"rtp_extra"`     // Extra's share alone
	RTPStop     *big.Rat `json:"rtp_stop"`      // mystery + Extra, always stop
	RTPContinue *big.Rat `json:"rtp_continue"`  // mystery + Extra, always continue
	VarStop     *big.Rat `json:"var_stop"`      // variance of win/stake, always stop
	VarContinue *big.Rat `json:"var_continue"`  // variance of win/stake, always continue
	PSoC        *big.Rat `json:"p_soc"`         // Stop-or-Continue offered
	PExtra      *big.Rat `json:"p_extra"`       // Extra unlocked
	MaxWin      int64    `json:"max_win_cents"` // largest total payout, any strategy
}

// Report is the PAR sheet of a whole table.
type Report struct {
	Version int   `json:"table_version"`
	Sheets  []PAR `json:"sheets"`
}

// ComputePAR builds the exact PAR sheet for every pick count and stake.
func (t *Table) ComputePAR() *Report {
	rep := &Report{Version: t.Version}
	for _, s := range t.Stakes {
		for p := MinPicks; p <= MaxPicks; p++ {
			rep.Sheets = append(rep.Sheets, t.par(p, s))
		}
	}
	return rep
}

// mysteryState is one way the present mystery balls fall on matched numbers.
type mysteryState struct {
	green, gold, red bool // present AND matched
	greenFirst       bool // both green and red matched, green revealed first
}

// par enumerates, for p picks: the match count m (hypergeometric), which
// mystery balls are present (independent), which of those sit on matched
// positions (positions are uniform and distinct, so this is a falling-
// factorial ratio), and, when green and red both match, their order (½ each).
func (t *Table) par(p int, stake int64) PAR {
	r := PAR{Picks: p, Stake: stake}
	zero := func() *big.Rat { return new(big.Rat) }
	r.HitFrequency, r.PWin, r.RTPMain, r.RTPMystery, r.RTPExtra = zero(), zero(), zero(), zero(), zero()
	r.RTPStop, r.RTPContinue, r.PSoC, r.PExtra = zero(), zero(), zero(), zero()
	r.VarStop, r.VarContinue = zero(), zero() // second moments (cents²) until the end

	total := binom(GridSize, Drawn)
	extra := t.extraMoments(p, stake)
	stakeRat := new(big.Rat).SetInt64(stake)

	for m := 0; m <= p; m++ {
		pm := new(big.Rat).SetFrac(new(big.Int).Mul(binom(p, m), binom(GridSize-p, Drawn-m)), total)
		r.PMatch = append(r.PMatch, pm)
		base := t.Main[p][m].Of(stake)
		if base > 0 {
			r.HitFrequency.Add(r.HitFrequency, pm)
		}
		addScaled(r.RTPMain, pm, base)

		for present := 0; present < 8; present++ { // bit0 green, bit1 gold, bit2 red
			pp := t.presenceProb(present)
			k := popcount(present)
			for matched := 0; matched < 8; matched++ {
				if matched&^present != 0 {
					continue
				}
				j := popcount(matched)
				pos := positionProb(m, k, j)
				if pos.Sign() == 0 {
					continue
				}
				w := new(big.Rat).Mul(pm, pp)
				w.Mul(w, pos)
				st := mysteryState{green: matched&1 != 0, gold: matched&2 != 0, red: matched&4 != 0}
				if st.green && st.red {
					half := new(big.Rat).Mul(w, big.NewRat(1, 2))
					st.greenFirst = true
					t.parState(&r, p, m, stake, base, st, half, extra)
					st.greenFirst = false
					t.parState(&r, p, m, stake, base, st, half, extra)
					continue
				}
				t.parState(&r, p, m, stake, base, st, w, extra)
			}
		}
	}
	for _, x := range []*big.Rat{r.RTPMain, r.RTPMystery, r.RTPExtra, r.RTPStop, r.RTPContinue} {
		x.Quo(x, stakeRat)
	}
	// Var = E[(win/stake)²] − RTP².
	stake2 := new(big.Rat).Mul(stakeRat, stakeRat)
	r.VarStop.Quo(r.VarStop, stake2).Sub(r.VarStop, new(big.Rat).Mul(r.RTPStop, r.RTPStop))
	r.VarContinue.Quo(r.VarContinue, stake2).Sub(r.VarContinue, new(big.Rat).Mul(r.RTPContinue, r.RTPContinue))
	return r
}

// moments are the mean and second moment of a random payout (cents), and
// its smallest and largest possible values.
type moments struct {
	mean, second *big.Rat
	min, max     int64
}

// parState adds one weighted game state to the sheet.
func (t *Table) parState(r *PAR, p, m int, stake, base int64, st mysteryState, w *big.Rat, extra moments) {
	gain := base
	if st.red {
		gain = 0
	} else if st.gold {
		gain = 2 * base
	}
	hasExtra := st.green && (!st.red || st.greenFirst)
	soc := !st.red && p-m > 0 && t.SoCEligible(gain, stake)

	addScaled(r.RTPMystery, w, gain)
	addScaled(r.RTPStop, w, gain)
	cont := moments{mean: new(big.Rat).SetInt64(gain), second: new(big.Rat).SetInt64(gain * gain), max: gain}
	if soc {
		r.PSoC.Add(r.PSoC, w)
		cont = t.socMoments(p-m, gain)
		cont.max = max(cont.max, gain)
	}
	stop := moments{mean: new(big.Rat).SetInt64(gain), second: new(big.Rat).SetInt64(gain * gain)}
	if hasExtra {
		r.PExtra.Add(r.PExtra, w)
		e := new(big.Rat).Mul(w, extra.mean)
		r.RTPExtra.Add(r.RTPExtra, e)
		r.RTPStop.Add(r.RTPStop, e)
		r.RTPContinue.Add(r.RTPContinue, e)
		// The boxes are independent of the gain: E[(G+X)²] = E[G²] + 2E[G]E[X] + E[X²].
		for _, g := range []*moments{&stop, &cont} {
			cross := new(big.Rat).Mul(g.mean, extra.mean)
			cross.Add(cross, cross)
			g.second = new(big.Rat).Add(g.second, cross)
			g.second.Add(g.second, extra.second)
		}
	}
	r.RTPContinue.Add(r.RTPContinue, new(big.Rat).Mul(w, cont.mean))
	r.VarStop.Add(r.VarStop, new(big.Rat).Mul(w, stop.second))
	r.VarContinue.Add(r.VarContinue, new(big.Rat).Mul(w, cont.second))
	if gain > 0 || (hasExtra && extra.min > 0) {
		r.PWin.Add(r.PWin, w)
	}
	maxWin := cont.max
	if hasExtra {
		maxWin += extra.max
	}
	r.MaxWin = max(r.MaxWin, maxWin)
}

// socMoments are the mean and second moment of the Stop-or-Continue gain
// for rem remaining picks: the 3 numbers are a uniform sample of the 30
// undrawn, so the hit count is hypergeometric.
func (t *Table) socMoments(rem int, gain int64) moments {
	undrawn := GridSize - Drawn
	den := binom(undrawn, SoCDrawn)
	out := moments{mean: new(big.Rat), second: new(big.Rat)}
	for h := 1; h <= SoCDrawn && h <= rem; h++ {
		ways := new(big.Int).Mul(binom(rem, h), binom(undrawn-rem, SoCDrawn-h))
		ph := new(big.Rat).SetFrac(ways, den)
		g := t.SoCMult[rem][h].Of(gain)
		addScaled(out.mean, ph, g)
		addScaled(out.second, ph, g*g)
		out.max = max(out.max, g)
	}
	return out
}

// extraMoments are the moments of one box, over the prizes it can hold.
func (t *Table) extraMoments(p int, stake int64) moments {
	out := moments{mean: new(big.Rat), second: new(big.Rat), min: -1}
	for i, prize := range t.ExtraPrize[p] {
		if t.ExtraProb[i] == 0 {
			continue
		}
		c := prize.Of(stake)
		pr := big.NewRat(t.ExtraProb[i], t.ExtraDen)
		addScaled(out.mean, pr, c)
		addScaled(out.second, pr, c*c)
		out.max = max(out.max, c)
		if out.min < 0 || c < out.min {
			out.min = c
		}
	}
	return out
}

// presenceProb is the probability of exactly this set of mystery balls.
func (t *Table) presenceProb(present int) *big.Rat {
	out := big.NewRat(1, 1)
	one := big.NewRat(1, 1)
	for i, pr := range []Ratio{t.Green, t.Gold, t.Red} {
		x := pr.Rat()
		if present&(1<<i) == 0 {
			x = new(big.Rat).Sub(one, x)
		}
		out.Mul(out, x)
	}
	return out
}

// positionProb: k mystery balls at distinct uniform positions among 10 of
// which m are matched; probability that a given j of them are on matched
// positions and the other k−j on unmatched ones.
func positionProb(m, k, j int) *big.Rat {
	if j > m || k-j > Drawn-m {
		return new(big.Rat)
	}
	num := new(big.Int).Mul(fall(m, j), fall(Drawn-m, k-j))
	return new(big.Rat).SetFrac(num, fall(Drawn, k))
}

// fall is the falling factorial n·(n−1)·…·(n−k+1).
func fall(n, k int) *big.Int {
	out := big.NewInt(1)
	for i := 0; i < k; i++ {
		out.Mul(out, big.NewInt(int64(n-i)))
	}
	return out
}

func binom(n, k int) *big.Int { return new(big.Int).Binomial(int64(n), int64(k)) }

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func addScaled(acc, w *big.Rat, cents int64) {
	if cents != 0 {
		acc.Add(acc, new(big.Rat).Mul(w, new(big.Rat).SetInt64(cents)))
	}
}

// OneIn returns 1/p rounded to the hundredth, as the official tables print it.
func OneIn(p *big.Rat) string {
	if p.Sign() == 0 {
		return "never"
	}
	return new(big.Rat).Inv(p).FloatString(2)
}

// WriteText prints the report as readable tables.
func (rep *Report) WriteText(w io.Writer) error {
	newTable := func() *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight) }
	var tw *tabwriter.Writer
	for i, s := range rep.Sheets {
		if i == 0 || s.Stake != rep.Sheets[i-1].Stake {
			if tw != nil {
				tw.Flush()
			}
			fmt.Fprintf(w, "\nStake %s — RTP as %% of stake (exact rationals, shown rounded)\n", Euros(s.Stake))
			tw = newTable()
			fmt.Fprintln(tw, "picks\thit freq\tP(win)\tmain\t+mystery\textra\tSTOP\tσ stop\tCONTINUE\tσ cont.\tP(SoC)\tP(Extra)\tmax win\t")
		}
		fmt.Fprintf(tw, "%d\t1 in %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Picks,
			OneIn(s.HitFrequency), pct(s.PWin), pct(s.RTPMain), pct(s.RTPMystery), pct(s.RTPExtra),
			pct(s.RTPStop), sd(s.VarStop), pct(s.RTPContinue), sd(s.VarContinue), pct(s.PSoC), pct(s.PExtra), Euros(s.MaxWin))
	}
	if tw != nil {
		tw.Flush()
	}
	fmt.Fprintln(w, "\nProbability of m matches (1 in …)")
	tw = newTable()
	fmt.Fprintln(tw, "picks\tm=0\t1\t2\t3\t4\t5\t6\t7\t8\t")
	for _, s := range rep.Sheets {
		if s.Stake != rep.Sheets[0].Stake {
			break
		}
		fmt.Fprintf(tw, "%d\t", s.Picks)
		for m := 0; m <= MaxPicks; m++ {
			if m < len(s.PMatch) {
				fmt.Fprintf(tw, "%s\t", OneIn(s.PMatch[m]))
			} else {
				fmt.Fprint(tw, "\t")
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WriteJSON prints the report as JSON; each rational is given exactly
// ("num/den") and as a decimal.
func (rep *Report) WriteJSON(w io.Writer) error {
	type ratJSON struct {
		Exact   string `json:"exact"`
		Decimal string `json:"decimal"`
	}
	conv := func(r *big.Rat) ratJSON { return ratJSON{r.RatString(), r.FloatString(12)} }
	type sheetJSON struct {
		Picks        int       `json:"picks"`
		Stake        int64     `json:"stake_cents"`
		PMatch       []ratJSON `json:"p_match"`
		HitFrequency ratJSON   `json:"hit_frequency"`
		PWin         ratJSON   `json:"p_win"`
		RTPMain      ratJSON   `json:"rtp_main"`
		RTPMystery   ratJSON   `json:"rtp_mystery"`
		RTPExtra     ratJSON   `json:"rtp_extra"`
		RTPStop      ratJSON   `json:"rtp_stop"`
		RTPContinue  ratJSON   `json:"rtp_continue"`
		VarStop      ratJSON   `json:"var_stop"`
		VarContinue  ratJSON   `json:"var_continue"`
		PSoC         ratJSON   `json:"p_soc"`
		PExtra       ratJSON   `json:"p_extra"`
		MaxWin       int64     `json:"max_win_cents"`
	}
	out := struct {
		Version int         `json:"table_version"`
		Sheets  []sheetJSON `json:"sheets"`
	}{Version: rep.Version}
	for _, s := range rep.Sheets {
		j := sheetJSON{Picks: s.Picks, Stake: s.Stake, HitFrequency: conv(s.HitFrequency), PWin: conv(s.PWin),
			RTPMain: conv(s.RTPMain), RTPMystery: conv(s.RTPMystery), RTPExtra: conv(s.RTPExtra),
			RTPStop: conv(s.RTPStop), RTPContinue: conv(s.RTPContinue), VarStop: conv(s.VarStop), VarContinue: conv(s.VarContinue),
			PSoC: conv(s.PSoC), PExtra: conv(s.PExtra),
			MaxWin: s.MaxWin}
		for _, p := range s.PMatch {
			j.PMatch = append(j.PMatch, conv(p))
		}
		out.Sheets = append(out.Sheets, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func pct(r *big.Rat) string {
	return new(big.Rat).Mul(r, big.NewRat(100, 1)).FloatString(3) + "%"
}

// sd is the standard deviation of win/stake, from its exact variance.
func sd(v *big.Rat) string {
	f, _ := v.Float64()
	return fmt.Sprintf("%.2f", math.Sqrt(f))
}

// Euros formats cents as euros, e.g. 150 → "1.50 €".
func Euros(c int64) string { return fmt.Sprintf("%d.%02d €", c/100, c%100) }
