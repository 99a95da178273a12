package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// Color of a ball in the gauge.
type Color uint8

// The four ball colours; green, gold and red are the mystery balls.
const (
	Blue Color = iota
	Green
	Gold
	Red
)

var colorNames = [...]string{"blue", "green", "gold", "red"}

func (c Color) String() string {
	if int(c) < len(colorNames) {
		return colorNames[c]
	}
	return fmt.Sprintf("color(%d)", c)
}

// MarshalText writes the colour by name.
func (c Color) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a colour by name.
func (c *Color) UnmarshalText(b []byte) error {
	for i, n := range colorNames {
		if n == string(b) {
			*c = Color(i)
			return nil
		}
	}
	return fmt.Errorf("unknown colour %q", b)
}

// Outcome is everything random about one game, fixed when the bet is
// accepted. Later choices only select among what it already holds.
type Outcome struct {
	Picks   Picks             `json:"picks"` // sorted, 3..8 distinct in 1..40
	Stake   int64             `json:"stake"` // cents
	Numbers [Drawn]uint8      `json:"numbers"`
	Colors  [Drawn]Color      `json:"colors"`
	SoCDraw [SoCDrawn]uint8   `json:"soc_draw"` // 3 of the 30 undrawn numbers
	Boxes   [ExtraBoxes]int64 `json:"boxes"`    // Extra prizes, cents
}

// Picks are the player's numbers. (A named type so that JSON writes them
// as numbers, not as base64 like a plain []uint8.)
type Picks []uint8

// MarshalJSON writes the picks as an array of numbers.
func (p Picks) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	for i, n := range p {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads an array of numbers.
func (p *Picks) UnmarshalJSON(b []byte) error {
	var ns []uint8
	if err := json.Unmarshal(b, &ns); err != nil {
		return err
	}
	*p = ns
	return nil
}

// Errors returned for a bad ticket.
var (
	ErrPickCount    = fmt.Errorf("pick between %d and %d numbers", MinPicks, MaxPicks)
	ErrPickRange    = fmt.Errorf("numbers must be between 1 and %d", GridSize)
	ErrPickRepeat   = errors.New("each number may be picked once")
	ErrInvalidStake = errors.New("stake is not one of the allowed stakes")
)

// ValidatePicks checks picks and returns them sorted as a new slice.
func ValidatePicks(picks []int) (Picks, error) {
	if len(picks) < MinPicks || len(picks) > MaxPicks {
		return nil, ErrPickCount
	}
	var seen uint64
	out := make(Picks, len(picks))
	for i, n := range picks {
		if n < 1 || n > GridSize {
			return nil, ErrPickRange
		}
		if seen&(1<<n) != 0 {
			return nil, ErrPickRepeat
		}
		seen |= 1 << n
		out[i] = uint8(n)
	}
	slices.Sort(out)
	return out, nil
}

// QuickPick returns n distinct random numbers in 1..40, sorted
// ("Système Flash").
func QuickPick(src Source, n int) ([]int, error) {
	if n < MinPicks || n > MaxPicks {
		return nil, ErrPickCount
	}
	var pool [GridSize]uint8
	fillPool(&pool)
	out := make([]int, n)
	for i := 0; i < n; i++ {
		j := i + int(Uniform(src, uint32(GridSize-i)))
		pool[i], pool[j] = pool[j], pool[i]
		out[i] = int(pool[i])
	}
	slices.Sort(out)
	return out, nil
}

func fillPool(pool *[GridSize]uint8) {
	for i := range pool {
		pool[i] = uint8(i + 1)
	}
}

// Deal fixes the whole outcome of one game from src, in this order (the
// provably fair derivation depends on it):
//  1. the 10 numbers: a partial Fisher–Yates shuffle of 1..40, position i
//     swapped with i + Uniform(40−i), for i = 0..9;
//  2. the Stop-or-Continue draw: the same shuffle continued over the 30
//     remaining numbers for positions 10..12;
//  3. the mystery balls, green then gold then red: present if
//     Uniform(den) < num for its probability num/den, and if present placed
//     at free[Uniform(len(free))] where free lists the still-blue positions
//     in increasing order;
//  4. the five Extra boxes, box 0..4: u = Uniform(den of the Extra
//     probabilities), prize index = first i with u < Σ_{k≤i} num_k.
//
// picks must come from ValidatePicks; the stake must be allowed.
func (t *Table) Deal(src Source, picks Picks, stake int64) (Outcome, error) {
	if !t.ValidStake(stake) {
		return Outcome{}, ErrInvalidStake
	}
	if len(picks) < MinPicks || len(picks) > MaxPicks {
		return Outcome{}, ErrPickCount
	}
	o := Outcome{Picks: picks, Stake: stake}
	var pool [GridSize]uint8
	fillPool(&pool)
	for i := 0; i < Drawn+SoCDrawn; i++ {
		j := i + int(Uniform(src, uint32(GridSize-i)))
		pool[i], pool[j] = pool[j], pool[i]
	}
	copy(o.Numbers[:], pool[:Drawn])
	copy(o.SoCDraw[:], pool[Drawn:Drawn+SoCDrawn])

	for _, m := range [...]struct {
		c Color
		p Ratio
	}{{Green, t.Green}, {Gold, t.Gold}, {Red, t.Red}} {
		if !bernoulli(src, m.p) {
			continue
		}
		var free [Drawn]uint8
		n := 0
		for pos, c := range o.Colors {
			if c == Blue {
				free[n] = uint8(pos)
				n++
			}
		}
		o.Colors[free[Uniform(src, uint32(n))]] = m.c
	}

	prizes := t.ExtraPrize[len(picks)]
	for b := range o.Boxes {
		u := int64(Uniform(src, uint32(t.ExtraDen)))
		i := 0
		for acc := t.ExtraProb[0]; u >= acc; acc += t.ExtraProb[i] {
			i++
		}
		o.Boxes[b] = prizes[i].Of(stake)
	}
	return o, nil
}

// Validate checks that an outcome (e.g. one read back from storage) is
// internally consistent: 10 distinct numbers, each mystery colour at most
// once, the Stop-or-Continue numbers distinct and among the undrawn.
func (o *Outcome) Validate() error {
	if len(o.Picks) < MinPicks || len(o.Picks) > MaxPicks {
		return ErrPickCount
	}
	var seen uint64
	for _, n := range o.Picks {
		if n < 1 || n > GridSize || seen&(1<<n) != 0 {
			return errors.New("outcome: bad picks")
		}
		seen |= 1 << n
	}
	seen = 0
	for _, n := range append(o.Numbers[:], o.SoCDraw[:]...) {
		if n < 1 || n > GridSize || seen&(1<<n) != 0 {
			return errors.New("outcome: drawn numbers must be 13 distinct numbers in 1..40")
		}
		seen |= 1 << n
	}
	var count [4]int
	for _, c := range o.Colors {
		if c > Red {
			return errors.New("outcome: unknown colour")
		}
		count[c]++
	}
	if count[Green] > 1 || count[Gold] > 1 || count[Red] > 1 {
		return errors.New("outcome: a mystery colour appears twice")
	}
	return nil
}

// pickMask returns the picks as a bit set (bit n for number n).
func pickMask(picks Picks) uint64 {
	var m uint64
	for _, n := range picks {
		m |= 1 << n
	}
	return m
}
