package engine

import (
	"strings"
	"testing"
)

// outcome builds a game by hand: the picks, the 10 numbers in reveal order,
// a colour for some positions (others blue), the SoC draw and the boxes.
func outcome(picks []int, stake int64, numbers [Drawn]uint8, colors map[int]Color, soc [SoCDrawn]uint8) Outcome {
	p, err := ValidatePicks(picks)
	if err != nil {
		panic(err)
	}
	o := Outcome{Picks: p, Stake: stake, Numbers: numbers, SoCDraw: soc, Boxes: [ExtraBoxes]int64{100, 200, 300, 400, 500}}
	for pos, c := range colors {
		o.Colors[pos] = c
	}
	if err := o.Validate(); err != nil {
		panic(err)
	}
	return o
}

// The ten numbers 11..20 are drawn in that order; 21, 22, 23 are the SoC draw.
var tenNumbers = [Drawn]uint8{11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
var socDraw = [SoCDrawn]uint8{21, 22, 23}

func TestSettleRules(t *testing.T) {
	tab := Default()
	cases := []struct {
		name     string
		picks    []int
		stake    int64
		colors   map[int]Color
		choices  Choices
		want     Result
		revealed int
	}{
		{name: "blue only: 8 picks 4 matches pays 2x",
			picks: []int{11, 12, 13, 14, 30, 31, 32, 33}, stake: 100,
			want: Result{Main: Main{Matches: 4, BaseGain: 200, Gain: 200, Remaining: 4, SoC: true}, Box: -1, Win: 200}},
		{name: "no match pays nothing and offers nothing",
			picks: []int{1, 2, 3}, stake: 100,
			want: Result{Main: Main{Remaining: 3}, Box: -1}},
		{name: "gold on a match doubles",
			picks: []int{11, 12, 13, 14, 30, 31, 32, 33}, stake: 100, colors: map[int]Color{2: Gold},
			want: Result{Main: Main{Matches: 4, Gold: true, BaseGain: 200, Gain: 400, Remaining: 4, SoC: true}, Box: -1, Win: 400}},
		{name: "gold on a non-match does nothing",
			picks: []int{11, 12, 13, 14, 30, 31, 32, 33}, stake: 100, colors: map[int]Color{7: Gold},
			want: Result{Main: Main{Matches: 4, BaseGain: 200, Gain: 200, Remaining: 4, SoC: true}, Box: -1, Win: 200}},
		{name: "red on a match loses everything and ends the reveal",
			picks: []int{11, 12, 13, 14, 30, 31, 32, 33}, stake: 100, colors: map[int]Color{1: Red, 3: Gold},
			want: Result{Main: Main{Matches: 4, Red: true, BaseGain: 200, Remaining: 4}, Box: -1}, revealed: 2},
		{name: "red and gold both matched: red wins",
			picks: []int{11, 12, 13, 14, 30, 31, 32, 33}, stake: 200, colors: map[int]Color{0: Gold, 3: Red},
			want: Result{Main: Main{Matches: 4, Gold: true, Red: true, BaseGain: 400, Remaining: 4}, Box: -1}, revealed: 4},
		{name: "red on a non-match does nothing",
			picks: []int{11, 12, 13, 30, 31}, stake: 100, colors: map[int]Color{9: Red},
			want: Result{Main: Main{Matches: 3, BaseGain: 200, Gain: 200, Remaining: 2, SoC: true}, Box: -1, Win: 200}},
		{name: "green on a match unlocks Extra",
			picks: []int{11, 12, 30}, stake: 100, colors: map[int]Color{0: Green}, choices: Choices{Box: 3},
			want: Result{Main: Main{Matches: 2, Green: true, BaseGain: 200, Gain: 200, Remaining: 1, SoC: true}, Box: 3, ExtraWin: 400, Win: 600}},
		{name: "green before red: gain lost but Extra still played",
			picks: []int{11, 12, 13, 30}, stake: 100, colors: map[int]Color{0: Green, 2: Red}, choices: Choices{Box: 4},
			want: Result{Main: Main{Matches: 3, Green: true, Red: true, BaseGain: 500, Remaining: 1}, Box: 4, ExtraWin: 500, Win: 500}, revealed: 3},
		{name: "red before green: game over, no Extra",
			picks: []int{11, 12, 13, 30}, stake: 100, colors: map[int]Color{0: Red, 2: Green}, choices: Choices{Box: 4},
			want: Result{Main: Main{Matches: 3, Red: true, BaseGain: 500, Remaining: 1}, Box: -1}, revealed: 1},
		{name: "continue with one hit among remaining",
			picks: []int{11, 12, 13, 14, 21, 30, 31, 32}, stake: 100, choices: Choices{Continue: true},
			want: Result{Main: Main{Matches: 4, BaseGain: 200, Gain: 200, Remaining: 4, SoC: true}, Continued: true, SoCHits: 1, SoCGain: 480, Box: -1, Win: 480}},
		{name: "continue with three hits",
			picks: []int{11, 12, 13, 14, 21, 22, 23, 32}, stake: 50, choices: Choices{Continue: true},
			want: Result{Main: Main{Matches: 4, BaseGain: 100, Gain: 100, Remaining: 4, SoC: true}, Continued: true, SoCHits: 3, SoCGain: 1000, Box: -1, Win: 1000}},
		{name: "continue with no hit loses all",
			picks: []int{11, 12, 30}, stake: 100, choices: Choices{Continue: true},
			want: Result{Main: Main{Matches: 2, BaseGain: 200, Gain: 200, Remaining: 1, SoC: true}, Continued: true, Box: -1}},
		{name: "continue then Extra: both paid",
			picks: []int{11, 12, 21}, stake: 100, colors: map[int]Color{1: Green}, choices: Choices{Continue: true, Box: 0},
			want: Result{Main: Main{Matches: 2, Green: true, BaseGain: 200, Gain: 200, Remaining: 1, SoC: true}, Continued: true, SoCHits: 1, SoCGain: 1900, Box: 0, ExtraWin: 100, Win: 2000}},
		{name: "continue ignored when not offered (gain too big: 5 picks, 4 matches, gold = 30x)",
			picks: []int{11, 12, 13, 14, 30}, stake: 100, colors: map[int]Color{0: Gold}, choices: Choices{Continue: true},
			want: Result{Main: Main{Matches: 4, Gold: true, BaseGain: 1500, Gain: 3000, Remaining: 1}, Box: -1, Win: 3000}},
		{name: "no SoC: every pick drawn and 25x is above the bound",
			picks: []int{11, 12, 13}, stake: 100, choices: Choices{Continue: true},
			want: Result{Main: Main{Matches: 3, BaseGain: 2500, Gain: 2500}, Box: -1, Win: 2500}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := outcome(tc.picks, tc.stake, tenNumbers, tc.colors, socDraw)
			got, err := tab.Settle(&o, tc.choices)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			want.Revealed = Drawn
			if tc.revealed != 0 {
				want.Revealed = tc.revealed
			}
			mask := pickMask(o.Picks)
			for i, n := range o.Numbers {
				want.Hits[i] = mask&(1<<n) != 0
			}
			if got != want {
				t.Errorf("\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestSettleRejectsBadBox(t *testing.T) {
	o := outcome([]int{11, 12, 30}, 100, tenNumbers, map[int]Color{0: Green}, socDraw)
	for _, box := range []int{-1, 5, 99} {
		if _, err := Default().Settle(&o, Choices{Box: box}); err != ErrBadBox {
			t.Errorf("box %d: err = %v, want ErrBadBox", box, err)
		}
	}
	// Without green the box is irrelevant and not checked.
	o = outcome([]int{11, 12, 30}, 100, tenNumbers, nil, socDraw)
	if _, err := Default().Settle(&o, Choices{Box: 7}); err != nil {
		t.Errorf("box ignored without Extra, got %v", err)
	}
}

// Eligibility is inclusive at 0.5× and 24× the stake, at every stake.
func TestSoCEligibilityBounds(t *testing.T) {
	tab := Default()
	for _, stake := range tab.Stakes {
		low, high := stake/2, 24*stake
		for _, c := range []struct {
			gain int64
			want bool
		}{{0, false}, {low - 1, false}, {low, true}, {stake, true}, {high, true}, {high + 1, false}} {
			if got := tab.SoCEligible(c.gain, stake); got != c.want {
				t.Errorf("stake %d gain %d: eligible=%v want %v", stake, c.gain, got, c.want)
			}
		}
	}
}

// Products are rounded down to the cent, in the main table and in SoC.
func TestRoundingDown(t *testing.T) {
	js := strings.Replace(string(embeddedTable), `"3": {"3": 25, "2": 2}`, `"3": {"3": 25, "2": 0.55}`, 1)
	tab, err := Load([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	// 0.55 × 50 = 27.5 → 27; 27 × 9.5 = 256.5 → 256.
	o := outcome([]int{11, 12, 21}, 50, tenNumbers, nil, socDraw)
	r, err := tab.Settle(&o, Choices{Continue: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Gain != 27 || r.SoCGain != 256 || r.Win != 256 {
		t.Errorf("gain=%d socGain=%d win=%d, want 27, 256, 256", r.Gain, r.SoCGain, r.Win)
	}
	// The stock table: 0.5 × 50 = 25 (5 picks, 2 matches), × 3 for 1 of 3 remaining.
	o = outcome([]int{11, 12, 21, 30, 31}, 50, tenNumbers, nil, socDraw)
	r, _ = Default().Settle(&o, Choices{Continue: true})
	if r.Gain != 25 || r.SoCGain != 75 {
		t.Errorf("gain=%d socGain=%d, want 25, 75", r.Gain, r.SoCGain)
	}
	if got := (Ratio{19, 2}).Of(75); got != 712 {
		t.Errorf("9.5 × 75 = %d, want 712", got)
	}
}

func TestValidatePicks(t *testing.T) {
	for _, c := range []struct {
		picks []int
		err   error
	}{
		{[]int{1, 2}, ErrPickCount},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9}, ErrPickCount},
		{[]int{0, 2, 3}, ErrPickRange},
		{[]int{1, 2, 41}, ErrPickRange},
		{[]int{1, 2, 2}, ErrPickRepeat},
		{[]int{40, 1, 20}, nil},
	} {
		got, err := ValidatePicks(c.picks)
		if err != c.err {
			t.Errorf("%v: err %v want %v", c.picks, err, c.err)
		}
		if err == nil && (got[0] != 1 || got[1] != 20 || got[2] != 40) {
			t.Errorf("%v: not sorted: %v", c.picks, got)
		}
	}
}

func TestDealRejectsBadTicket(t *testing.T) {
	src := NewSecureSource()
	if _, err := Default().Deal(src, []uint8{1, 2, 3}, 75); err != ErrInvalidStake {
		t.Errorf("stake 75: %v", err)
	}
	if _, err := Default().Deal(src, []uint8{1, 2}, 100); err != ErrPickCount {
		t.Errorf("2 picks: %v", err)
	}
}
