package engine

import "errors"

// Choices are the player's decisions during a game. The zero value is the
// default used when a player leaves: Stop, and the first Extra box.
type Choices struct {
	Continue bool `json:"continue"`
	Box      int  `json:"box"`
}

// ErrBadBox is returned for a box index outside 0..4.
var ErrBadBox = errors.New("extra box must be 0..4")

// Main is what the main game alone decides: everything shown before the
// player's first choice.
type Main struct {
	Hits      [Drawn]bool `json:"hits"`      // Numbers[i] is one of the picks
	Matches   int         `json:"matches"`   // picks among the 10 numbers
	Revealed  int         `json:"revealed"`  // numbers shown: a matched red stops the reveal
	Gold      bool        `json:"gold"`      // gold matched: gain doubled
	Red       bool        `json:"red"`       // red matched: gain lost, game over
	Green     bool        `json:"green"`     // green matched before any matched red: Extra
	BaseGain  int64       `json:"base_gain"` // table prize × stake, cents
	Gain      int64       `json:"gain"`      // after gold and red, cents
	Remaining int         `json:"remaining"` // picks not among the 10
	SoC       bool        `json:"soc"`       // Stop-or-Continue is offered
}

// Result is a settled game.
type Result struct {
	Main
	Continued bool  `json:"continued"`
	SoCHits   int   `json:"soc_hits"`
	SoCGain   int64 `json:"soc_gain"` // replaces Gain when Continued
	Box       int   `json:"box"`      // -1 when Extra was not played
	ExtraWin  int64 `json:"extra_win"`
	Win       int64 `json:"win"` // total paid, cents
}

// Evaluate works out the main game of an outcome.
func (t *Table) Evaluate(o *Outcome) Main {
	var m Main
	mask := pickMask(o.Picks)
	m.Revealed = Drawn
	for i, n := range o.Numbers {
		if mask&(1<<n) == 0 {
			continue
		}
		m.Hits[i] = true
		m.Matches++
		if m.Revealed < Drawn {
			continue // after a matched red nothing else takes effect
		}
		switch o.Colors[i] {
		case Green:
			m.Green = true
		case Gold:
			m.Gold = true
		case Red:
			m.Red = true
			m.Revealed = i + 1
		}
	}
	// Matches counts every pick drawn (the numbers are fixed); only the
	// effects stop at a red. Gold anywhere among the matches still counts for
	// the table's sake, but a red voids the gain anyway.
	p := len(o.Picks)
	m.Remaining = p - m.Matches
	m.BaseGain = t.Main[p][m.Matches].Of(o.Stake)
	switch {
	case m.Red:
		m.Gain = 0
	case m.Gold:
		m.Gain = 2 * m.BaseGain
	default:
		m.Gain = m.BaseGain
	}
	m.SoC = !m.Red && m.Remaining > 0 && t.SoCEligible(m.Gain, o.Stake)
	return m
}

// SoCEligible applies the Stop-or-Continue bounds (inclusive) to a gain.
func (t *Table) SoCEligible(gain, stake int64) bool {
	// gain/stake within [min, max] ⇔ gain·Den ≥ stake·Num for each bound.
	return gain > 0 &&
		gain*t.SoCMin.Den >= stake*t.SoCMin.Num &&
		gain*t.SoCMax.Den <= stake*t.SoCMax.Num
}

// Settle plays the outcome with the player's choices. Continue is ignored
// when Stop-or-Continue was not offered, Box when Extra was not unlocked.
func (t *Table) Settle(o *Outcome, c Choices) (Result, error) {
	r := Result{Main: t.Evaluate(o), Box: -1}
	win := r.Gain
	if r.SoC && c.Continue {
		r.Continued = true
		mask := pickMask(o.Picks)
		for _, n := range o.SoCDraw {
			if mask&(1<<n) != 0 {
				r.SoCHits++
			}
		}
		r.SoCGain = t.SoCMult[r.Remaining][r.SoCHits].Of(r.Gain)
		win = r.SoCGain
	}
	if r.Green {
		if c.Box < 0 || c.Box >= ExtraBoxes {
			return Result{}, ErrBadBox
		}
		r.Box = c.Box
		r.ExtraWin = o.Boxes[c.Box]
		win += r.ExtraWin
	}
	r.Win = win
	return r, nil
}
