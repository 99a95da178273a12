package session

import (
	"math"
	"testing"
)

func TestNextLimit(t *testing.T) {
	for _, c := range []struct {
		name          string
		limit, inPlay int64
		trouble, cut  bool
		want          int64
	}{
		{"no limit, on time: none", math.MaxInt64, 5000, false, false, math.MaxInt64},
		{"first trouble: nine tenths of what is in play", math.MaxInt64, 5000, true, true, 4500},
		{"trouble, cut not due yet: unchanged", 4500, 4400, true, false, 4500},
		{"trouble below the limit: from the limit", 1000, 3000, true, true, 900},
		{"never below the floor", 10, 10, true, true, minLimit},
		{"on time and binding: grows a tenth", 1000, 950, false, false, 1100},
		{"on time, small: grows by 2", 20, 19, false, false, 22},
		{"on time, not binding: unchanged", 1000, 500, false, false, 1000},
	} {
		if got := nextLimit(c.limit, c.inPlay, c.trouble, c.cut); got != c.want {
			t.Errorf("%s: nextLimit(%d, %d, %v, %v) = %d, want %d", c.name, c.limit, c.inPlay, c.trouble, c.cut, got, c.want)
		}
	}
}

func TestAdmissionTakeAndDone(t *testing.T) {
	a := newAdmission(3, 0, nil)
	if !a.take(2) || a.take(2) || !a.open(1) || a.open(2) {
		t.Fatal("ceiling of 3: 2 then 2 more must be refused, 1 more allowed")
	}
	a.force(5) // resumed games are never refused
	if a.inPlay.Load() != 7 || a.open(1) {
		t.Fatalf("in play %d", a.inPlay.Load())
	}
	a.done(7)
	if !a.take(3) || a.refused.Load() != 1 {
		t.Fatalf("after done: take 3 must pass; refused %d", a.refused.Load())
	}
}
