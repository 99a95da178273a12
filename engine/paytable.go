// Package engine holds the pure game logic of Keno Mystères: prize tables,
// random sampling, the deal made at bet time, settlement of the player's
// choices and the exact return-to-player (PAR) report. It does no I/O.
package engine

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
)

// Grid geometry of the game; the table must agree with it.
const (
	GridSize   = 40
	Drawn      = 10
	MinPicks   = 3
	MaxPicks   = 8
	SoCDrawn   = 3
	ExtraBoxes = 5
)

//go:embed paytables.json
var embeddedTable []byte

// Ratio is an exact non-negative rational read from the table's decimal
// figures (0.5, 9.5, 2.4 …); money products are floor(cents × Num / Den).
type Ratio struct{ Num, Den int64 }

// Of returns floor(cents × r): the rules round every product down to the cent.
func (r Ratio) Of(cents int64) int64 { return cents * r.Num / r.Den }

// Rat returns r as a big.Rat for exact arithmetic.
func (r Ratio) Rat() *big.Rat { return big.NewRat(r.Num, r.Den) }

// IsZero reports whether r is 0.
func (r Ratio) IsZero() bool { return r.Num == 0 }

// Table is a validated prize table. It is immutable after Load.
type Table struct {
	Version      int
	Stakes       []int64 // allowed stakes in cents
	DefaultStake int64
	// Main[p][m]: prize × stake for p picks and m matches (zero when absent).
	Main [MaxPicks + 1][MaxPicks + 1]Ratio
	// Mystery presence probabilities, over a common denominator.
	Green, Gold, Red Ratio
	// Stop-or-Continue eligibility bounds (× stake, inclusive).
	SoCMin, SoCMax Ratio
	// SoCMult[r][h]: multiplier for r remaining picks with h of them drawn.
	SoCMult [MaxPicks + 1][SoCDrawn + 1]Ratio
	// SoCDefined[r]: the table has a row for r remaining picks.
	SoCDefined [MaxPicks + 1]bool
	// ExtraProb[i] is the probability of prize index i (Num over ExtraDen).
	ExtraProb []int64
	ExtraDen  int64
	// ExtraPrize[p][i]: prize index i × stake for p picks.
	ExtraPrize [MaxPicks + 1][]Ratio

	source []byte // the JSON it was loaded from
}

// Source is the table as published: the JSON it was loaded from, which
// the game's rules screen shows (never a copy of it).
func (t *Table) Source() []byte { return t.source }

var defaultTable = mustLoad(embeddedTable)

// Default returns the prize table embedded in the engine.
func Default() *Table { return defaultTable }

func mustLoad(b []byte) *Table {
	t, err := Load(b)
	if err != nil {
		panic("engine: embedded paytables.json: " + err.Error())
	}
	return t
}

type rawTable struct {
	Game    string `json:"game"`
	Version int    `json:"version"`
	Grid    int    `json:"grid"`
	Drawn   int    `json:"drawn"`
	Picks   struct {
		Min int `json:"min"`
		Max int `json:"max"`
	} `json:"picks"`
	Stakes       []int64                           `json:"stakes_cents"`
	DefaultStake int64                             `json:"default_stake_cents"`
	Main         map[string]map[string]json.Number `json:"main"`
	Mystery      map[string]json.RawMessage        `json:"mystery"`
	SoC          struct {
		Eligible struct {
			Min json.Number `json:"min"`
			Max json.Number `json:"max"`
		} `json:"eligible_gain_x_stake"`
		Draw       int                               `json:"draw"`
		Multiplier map[string]map[string]json.Number `json:"multiplier"`
	} `json:"stop_or_continue"`
	Extra struct {
		Boxes         int                      `json:"boxes"`
		Probabilities []json.Number            `json:"probabilities"`
		Prizes        map[string][]json.Number `json:"prizes_x_stake"`
	} `json:"extra"`
}

// Load parses and validates a prize table in the paytables.json format. It
// rejects anything the engine could not play exactly: unknown geometry,
// negative or non-decimal figures, probabilities not summing to one, or a
// Stop-or-Continue row missing for a reachable number of remaining picks.
func Load(b []byte) (*Table, error) {
	var raw rawTable
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("paytable: malformed JSON: %w", err)
	}
	if raw.Grid != GridSize || raw.Drawn != Drawn || raw.Picks.Min != MinPicks || raw.Picks.Max != MaxPicks {
		return nil, fmt.Errorf("paytable: geometry grid=%d drawn=%d picks=%d..%d, engine plays %d/%d with %d..%d picks",
			raw.Grid, raw.Drawn, raw.Picks.Min, raw.Picks.Max, GridSize, Drawn, MinPicks, MaxPicks)
	}
	t := &Table{Version: raw.Version, DefaultStake: raw.DefaultStake, source: bytes.Clone(b)}
	for p := range t.Main { // absent table entries pay nothing
		for m := range t.Main[p] {
			t.Main[p][m] = Ratio{0, 1}
		}
		for h := range t.SoCMult[p] {
			t.SoCMult[p][h] = Ratio{0, 1}
		}
	}
	if len(raw.Stakes) == 0 {
		return nil, errors.New("paytable: no stakes_cents")
	}
	for _, s := range raw.Stakes {
		if s <= 0 || s > 100_000 {
			return nil, fmt.Errorf("paytable: stake %d cents out of range", s)
		}
	}
	t.Stakes = append([]int64(nil), raw.Stakes...)
	sort.Slice(t.Stakes, func(i, j int) bool { return t.Stakes[i] < t.Stakes[j] })
	if !t.ValidStake(t.DefaultStake) {
		return nil, fmt.Errorf("paytable: default stake %d is not an allowed stake", t.DefaultStake)
	}

	for p := MinPicks; p <= MaxPicks; p++ {
		row, ok := raw.Main[strconv.Itoa(p)]
		if !ok {
			return nil, fmt.Errorf("paytable: main table has no row for %d picks", p)
		}
		for k, v := range row {
			m, err := strconv.Atoi(k)
			if err != nil || m < 0 || m > p {
				return nil, fmt.Errorf("paytable: main[%d] has impossible match count %q", p, k)
			}
			r, err := parseRatio(v)
			if err != nil {
				return nil, fmt.Errorf("paytable: main[%d][%d]: %w", p, m, err)
			}
			t.Main[p][m] = r
		}
	}
	if len(raw.Main) != MaxPicks-MinPicks+1 {
		return nil, fmt.Errorf("paytable: main table has %d rows, want %d", len(raw.Main), MaxPicks-MinPicks+1)
	}

	probs := map[string]*Ratio{"green": &t.Green, "gold": &t.Gold, "red": &t.Red}
	for name, dst := range probs {
		v, ok := raw.Mystery[name]
		if !ok {
			return nil, fmt.Errorf("paytable: mystery probability for %s missing", name)
		}
		r, err := parseRatio(json.Number(v))
		if err != nil || r.Num > r.Den {
			return nil, fmt.Errorf("paytable: mystery %s probability %s is not in [0,1]", name, v)
		}
		*dst = r
	}

	var err error
	if t.SoCMin, err = parseRatio(raw.SoC.Eligible.Min); err != nil {
		return nil, fmt.Errorf("paytable: stop_or_continue min: %w", err)
	}
	if t.SoCMax, err = parseRatio(raw.SoC.Eligible.Max); err != nil {
		return nil, fmt.Errorf("paytable: stop_or_continue max: %w", err)
	}
	if t.SoCMin.IsZero() || t.SoCMin.Rat().Cmp(t.SoCMax.Rat()) > 0 {
		return nil, errors.New("paytable: stop_or_continue bounds must satisfy 0 < min <= max")
	}
	if raw.SoC.Draw != SoCDrawn {
		return nil, fmt.Errorf("paytable: stop_or_continue draws %d numbers, engine draws %d", raw.SoC.Draw, SoCDrawn)
	}
	for k, row := range raw.SoC.Multiplier {
		r, err := strconv.Atoi(k)
		if err != nil || r < 1 || r > MaxPicks {
			return nil, fmt.Errorf("paytable: stop_or_continue multiplier has impossible remaining count %q", k)
		}
		t.SoCDefined[r] = true
		for hk, v := range row {
			h, err := strconv.Atoi(hk)
			if err != nil || h < 1 || h > SoCDrawn || h > r {
				return nil, fmt.Errorf("paytable: multiplier[%d] has impossible hit count %q", r, hk)
			}
			if t.SoCMult[r][h], err = parseRatio(v); err != nil {
				return nil, fmt.Errorf("paytable: multiplier[%d][%d]: %w", r, h, err)
			}
		}
	}

	if raw.Extra.Boxes != ExtraBoxes {
		return nil, fmt.Errorf("paytable: extra has %d boxes, engine plays %d", raw.Extra.Boxes, ExtraBoxes)
	}
	if err := t.loadExtra(raw.Extra.Probabilities, raw.Extra.Prizes); err != nil {
		return nil, err
	}
	if err := t.checkSoCReachable(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Table) loadExtra(probs []json.Number, prizes map[string][]json.Number) error {
	if len(probs) == 0 {
		return errors.New("paytable: extra has no probabilities")
	}
	rs := make([]Ratio, len(probs))
	den := int64(1)
	for i, v := range probs {
		r, err := parseRatio(v)
		if err != nil {
			return fmt.Errorf("paytable: extra probability %d: %w", i, err)
		}
		rs[i] = r
		den = lcm(den, r.Den)
	}
	t.ExtraDen = den
	var sum int64
	for _, r := range rs {
		n := r.Num * (den / r.Den)
		t.ExtraProb = append(t.ExtraProb, n)
		sum += n
	}
	if sum != den {
		return fmt.Errorf("paytable: extra probabilities sum to %d/%d, not 1", sum, den)
	}
	for p := MinPicks; p <= MaxPicks; p++ {
		row, ok := prizes[strconv.Itoa(p)]
		if !ok || len(row) != len(probs) {
			return fmt.Errorf("paytable: extra prizes for %d picks must list %d values", p, len(probs))
		}
		for i, v := range row {
			r, err := parseRatio(v)
			if err != nil {
				return fmt.Errorf("paytable: extra prize [%d][%d]: %w", p, i, err)
			}
			t.ExtraPrize[p] = append(t.ExtraPrize[p], r)
		}
	}
	return nil
}

// checkSoCReachable makes sure that every (picks, matches) that can be offered
// Stop-or-Continue, with or without gold, has a multiplier row for its
// remaining picks: a hole there would be an unplayable game.
func (t *Table) checkSoCReachable() error {
	for p := MinPicks; p <= MaxPicks; p++ {
		for m := 0; m < p; m++ {
			base := t.Main[p][m]
			for _, gold := range []int64{1, 2} {
				g := Ratio{base.Num * gold, base.Den}
				if t.socEligibleX(g) && !t.SoCDefined[p-m] {
					return fmt.Errorf("paytable: %d picks with %d matches can reach Stop-or-Continue but multiplier has no row for %d remaining", p, m, p-m)
				}
			}
		}
	}
	return nil
}

// socEligibleX applies the eligibility bounds to a gain expressed × stake.
func (t *Table) socEligibleX(g Ratio) bool {
	gr := g.Rat()
	return !g.IsZero() && gr.Cmp(t.SoCMin.Rat()) >= 0 && gr.Cmp(t.SoCMax.Rat()) <= 0
}

// ValidStake reports whether cents is one of the allowed stakes.
func (t *Table) ValidStake(cents int64) bool {
	for _, s := range t.Stakes {
		if s == cents {
			return true
		}
	}
	return false
}

// parseRatio reads a non-negative decimal figure exactly (no float).
func parseRatio(n json.Number) (Ratio, error) {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || r.Sign() < 0 {
		return Ratio{}, fmt.Errorf("%q is not a non-negative decimal", n)
	}
	if !r.Num().IsInt64() || !r.Denom().IsInt64() || r.Denom().Int64() > 1_000_000 || r.Num().Int64() > 1_000_000_000 {
		return Ratio{}, fmt.Errorf("%q is out of range", n)
	}
	return Ratio{r.Num().Int64(), r.Denom().Int64()}, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func lcm(a, b int64) int64 { return a / gcd(a, b) * b }
