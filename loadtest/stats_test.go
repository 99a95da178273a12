package main

import (
	"math/rand/v2"
	"testing"
)

// The RTP check against games drawn from a known distribution: a fair
// run passes, one jackpot does not fail it, a run that pays too much or
// too little across the board fails.
func TestRTPCheck(t *testing.T) {
	// win/stake: 0 w.p. 0.706, 2 w.p. 0.29, 50 w.p. 0.004 → mean 0.78.
	f := figure{mean: 0.78}
	f.variance = 0.29*4 + 0.004*2500 - f.mean*f.mean
	run := func(scale float64, jackpot bool) RTPCheck {
		s := newStats()
		r := rand.New(rand.NewPCG(7, 7))
		for range 50_000 {
			x := 0.0
			switch u := r.Float64(); {
			case u < 0.004:
				x = 50
			case u < 0.294:
				x = 2
			}
			s.settled(100, int64(x*scale*100), f)
		}
		if jackpot {
			s.settled(100, 2_500*100, f) // one 2 500× win: +0.05 on the mean
		}
		return s.rtp()
	}
	if c := run(1, false); !c.Within {
		t.Fatalf("a fair run fails: %+v", c)
	}
	if c := run(1, true); !c.Within || c.Mean <= c.ExactX+c.HalfCI {
		t.Fatalf("one jackpot should push the mean out and still pass: %+v", c)
	}
	if c := run(1.15, false); c.Within {
		t.Fatalf("paying 15%% too much passes: %+v", c)
	}
	if c := run(0.85, false); c.Within {
		t.Fatalf("paying 15%% too little passes: %+v", c)
	}
}
