package engine

import "testing"

// FuzzSettle feeds arbitrary outcomes and choices to Settle: anything that
// Validate accepts must settle without panic into a coherent result.
func FuzzSettle(f *testing.F) {
	f.Add([]byte{3, 7, 12, 19, 25, 33, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0, 21, 22, 23}, true, 2, int64(100))
	f.Add([]byte{8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 2, 1, 0, 0, 0, 0, 0, 0, 3, 0, 11, 12, 13}, false, 0, int64(50))
	tab := Default()
	f.Fuzz(func(t *testing.T, b []byte, cont bool, box int, stake int64) {
		if len(b) < 1 {
			return
		}
		p := int(b[0])
		b = b[1:]
		if p < MinPicks || p > MaxPicks || len(b) < p+Drawn+Drawn+SoCDrawn || !tab.ValidStake(stake) {
			return
		}
		o := Outcome{Stake: stake}
		for _, n := range b[:p] {
			o.Picks = append(o.Picks, n)
		}
		b = b[p:]
		copy(o.Numbers[:], b[:Drawn])
		for i := range o.Colors {
			o.Colors[i] = Color(b[Drawn+i])
		}
		copy(o.SoCDraw[:], b[2*Drawn:])
		for i := range o.Boxes {
			o.Boxes[i] = int64(i+1) * stake
		}
		if o.Validate() != nil {
			return
		}
		r, err := tab.Settle(&o, Choices{Continue: cont, Box: box})
		if err != nil {
			if err != ErrBadBox || !tab.Evaluate(&o).Green {
				t.Fatalf("settle error %v for a valid outcome", err)
			}
			return
		}
		switch {
		case r.Win < 0:
			t.Fatalf("negative win %+v", r)
		case r.Red && r.Gain != 0:
			t.Fatalf("red matched but gain %d", r.Gain)
		case r.SoC && (r.Remaining == 0 || r.Red):
			t.Fatalf("SoC offered without remaining picks or after red: %+v", r)
		case r.Continued && !r.SoC:
			t.Fatalf("continued without an offer")
		case r.Revealed < Drawn && !r.Red:
			t.Fatalf("reveal stopped without a red")
		case r.Win > (20000+100)*stake:
			t.Fatalf("win %d beyond any prize", r.Win)
		}
	})
}
