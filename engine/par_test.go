package engine

import (
	"bytes"
	"encoding/json"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"testing"
)

// The official 8-pick odds printed in the regulation, "1 chance sur".
func TestOfficialEightPickOdds(t *testing.T) {
	sheet := Default().par(8, 100)
	want := map[int]string{8: "1708993.00", 7: "21362.41", 6: "841.87", 5: "75.17", 4: "13.36", 3: "4.50"}
	for m, w := range want {
		if got := OneIn(sheet.PMatch[m]); got != w {
			t.Errorf("8 picks, %d matches: 1 in %s, regulation says 1 in %s", m, got, w)
		}
	}
}

func TestPARSheetsAreConsistent(t *testing.T) {
	rep := Default().ComputePAR()
	if len(rep.Sheets) != 3*6 {
		t.Fatalf("%d sheets, want 18", len(rep.Sheets))
	}
	one := big.NewRat(1, 1)
	for _, s := range rep.Sheets {
		sum := new(big.Rat)
		for _, p := range s.PMatch {
			sum.Add(sum, p)
		}
		if sum.Cmp(one) != 0 {
			t.Errorf("picks %d: match probabilities sum to %s", s.Picks, sum.RatString())
		}
		// The tables were designed to return about 70% with always-stop.
		stop, _ := s.RTPStop.Float64()
		cont, _ := s.RTPContinue.Float64()
		if stop < 0.69 || stop > 0.71 || cont < 0.65 || cont > 0.70 {
			t.Errorf("picks %d stake %d: RTP stop %.4f continue %.4f out of design range", s.Picks, s.Stake, stop, cont)
		}
		// Mystery effects: gold adds, red removes more (0.4 each but red voids a doubled gain too).
		if s.RTPMystery.Cmp(s.RTPMain) >= 0 {
			t.Errorf("picks %d: mystery RTP %s not below main %s", s.Picks, s.RTPMystery.FloatString(5), s.RTPMain.FloatString(5))
		}
		// Stop + Extra is exactly mystery + extra.
		if new(big.Rat).Add(s.RTPMystery, s.RTPExtra).Cmp(s.RTPStop) != 0 {
			t.Errorf("picks %d: stop RTP is not mystery + extra", s.Picks)
		}
	}
	// Extra is reached with P(green present) × P(green on a match) × (no red before it):
	// cross-check the 3-pick sheet by a direct formula.
	p3 := rep.Sheets[0]
	if p3.Picks != 3 || p3.PExtra.Sign() <= 0 || p3.PExtra.Cmp(big.NewRat(3, 10)) >= 0 {
		t.Errorf("P(Extra) for 3 picks = %s", p3.PExtra.FloatString(6))
	}
	// The largest prize: 8 of 8 with gold and the best Extra box.
	last := rep.Sheets[len(rep.Sheets)-1]
	if last.Picks != 8 || last.MaxWin != (20000+30)*last.Stake {
		t.Errorf("max win for 8 picks at %d = %d", last.Stake, last.MaxWin)
	}
}

// The exact figures agree with a brute-force count over every colour
// placement for a fixed set of matched positions.
func TestPARMatchesBruteForce(t *testing.T) {
	tab := Default()
	for _, p := range []int{3, 5, 8} {
		exact := new(big.Rat)
		sheet := tab.par(p, 100)
		for m := 0; m <= p; m++ {
			// Picks p; the matched ones sit at positions 0..m-1 (by symmetry
			// of the uniform order, any m positions give the same law).
			picks := make([]int, 0, p)
			var numbers [Drawn]uint8
			for i := range numbers {
				numbers[i] = uint8(i + 1)
			}
			for i := 0; i < m; i++ {
				picks = append(picks, i+1)
			}
			for i := m; i < p; i++ {
				picks = append(picks, 30+i)
			}
			pk, _ := ValidatePicks(picks)
			o := Outcome{Picks: pk, Stake: 100, Numbers: numbers, SoCDraw: [3]uint8{11, 12, 13}}
			mean := new(big.Rat)
			// Every placement: each colour absent or at one of 10 positions, distinct.
			for g := -1; g < Drawn; g++ {
				for d := -1; d < Drawn; d++ {
					for r := -1; r < Drawn; r++ {
						if (g >= 0 && (g == d || g == r)) || (d >= 0 && d == r) {
							continue
						}
						w := placementWeight(tab, g, d, r)
						o.Colors = [Drawn]Color{}
						set := func(pos int, c Color) {
							if pos >= 0 {
								o.Colors[pos] = c
							}
						}
						set(g, Green)
						set(d, Gold)
						set(r, Red)
						mn := tab.Evaluate(&o)
						addScaled(mean, w, mn.Gain)
					}
				}
			}
			exact.Add(exact, new(big.Rat).Mul(mean, sheet.PMatch[m]))
		}
		exact.Quo(exact, big.NewRat(100, 1))
		if exact.Cmp(sheet.RTPMystery) != 0 {
			t.Errorf("picks %d: brute force %s, PAR %s", p, exact.FloatString(8), sheet.RTPMystery.FloatString(8))
		}
	}
}

// placementWeight: colour c absent with 1−p_c; present at a given position
// with p_c / (free positions when it is placed), in the deal's order.
func placementWeight(tab *Table, g, d, r int) *big.Rat {
	w := big.NewRat(1, 1)
	free := int64(Drawn)
	for _, c := range []struct {
		pos int
		p   Ratio
	}{{g, tab.Green}, {d, tab.Gold}, {r, tab.Red}} {
		if c.pos < 0 {
			w.Mul(w, new(big.Rat).Sub(big.NewRat(1, 1), c.p.Rat()))
			continue
		}
		w.Mul(w, new(big.Rat).Mul(c.p.Rat(), big.NewRat(1, free)))
		free--
	}
	return w
}

// Plays games through the real Deal and Settle and checks each RTP against
// the exact figure at 4 standard errors. The generator is seeded, so the run
// is reproducible; `keno-server simulate` runs the same check at any size.
func TestSimulationAgreesWithExactRTP(t *testing.T) {
	n := 60_000
	if testing.Short() {
		n = 10_000
	}
	src := &SecureSource{mrand.NewChaCha8([32]byte{'k', 'e', 'n', 'o'})}
	for p := MinPicks; p <= MaxPicks; p++ {
		for _, cont := range []bool{false, true} {
			r, err := Default().Simulate(src, p, 100, n, cont)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Within(4) {
				t.Errorf("continue=%v: %v", cont, r)
			}
		}
	}
}

func TestReportOutputs(t *testing.T) {
	rep := Default().ComputePAR()
	var txt, js bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "1708993.00") || !strings.Contains(txt.String(), "CONTINUE") {
		t.Errorf("text report lacks the 8-pick odds or headings:\n%s", txt.String())
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Sheets []struct {
			Picks   int                    `json:"picks"`
			RTPStop struct{ Exact string } `json:"rtp_stop"`
		} `json:"sheets"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Sheets) != 18 {
		t.Fatalf("JSON report: %v, %d sheets", err, len(back.Sheets))
	}
	r, ok := new(big.Rat).SetString(back.Sheets[0].RTPStop.Exact)
	if !ok || r.Cmp(rep.Sheets[0].RTPStop) != 0 {
		t.Errorf("JSON exact RTP %q does not round-trip", back.Sheets[0].RTPStop.Exact)
	}
}

func TestLoadRejectsBadTables(t *testing.T) {
	base := string(embeddedTable)
	cases := map[string]string{
		"malformed JSON":         base[:len(base)/2],
		"probabilities not 1":    strings.Replace(base, "[0.40, 0.25", "[0.41, 0.25", 1),
		"negative prize":         strings.Replace(base, `"3": {"3": 25, "2": 2}`, `"3": {"3": 25, "2": -2}`, 1),
		"impossible match count": strings.Replace(base, `"3": {"3": 25, "2": 2}`, `"3": {"4": 25, "2": 2}`, 1),
		"missing SoC row":        strings.Replace(base, `"5": {"1": 2, "2": 3, "3": 10}`, `"6": {"1": 2}`, 1),
		"wrong grid":             strings.Replace(base, `"grid": 40`, `"grid": 49`, 1),
		"bad default stake":      strings.Replace(base, `"default_stake_cents": 100`, `"default_stake_cents": 150`, 1),
		"probability above 1":    strings.Replace(base, `"green": 0.3`, `"green": 1.3`, 1),
		"missing extra prizes":   strings.Replace(base, `"3": [2, 3, 5, 10, 20, 100],`, ``, 1),
	}
	for name, js := range cases {
		if js == base {
			t.Fatalf("%s: replacement did not apply", name)
		}
		if _, err := Load([]byte(js)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.HasPrefix(err.Error(), "paytable:") {
			t.Errorf("%s: unclear error %v", name, err)
		}
	}
}

// The exact variance agrees with the sample variance of simulated games
// for the pick counts without rare jackpots (where a sample is reliable).
func TestExactVariance(t *testing.T) {
	src := &SecureSource{mrand.NewChaCha8([32]byte{'v', 'a', 'r'})}
	for _, p := range []int{3, 4} {
		sheet := Default().par(p, 100)
		for _, cont := range []bool{false, true} {
			exact, _ := sheet.VarStop.Float64()
			if cont {
				exact, _ = sheet.VarContinue.Float64()
			}
			r, _ := Default().Simulate(src, p, 100, 100_000, cont)
			if exact <= 0 || r.Var < 0.9*exact || r.Var > 1.1*exact {
				t.Errorf("picks %d continue=%v: sample variance %.3f, exact %.3f", p, cont, r.Var, exact)
			}
		}
	}
}
