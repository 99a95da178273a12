package journal

import (
	"strings"
	"testing"
)

func chain(t *testing.T, s *Sealer, n int) []Entry {
	var out []Entry
	var h Head
	for i := 0; i < n; i++ {
		e, err := s.Seal(h, "bet", map[string]int{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
		h = Head{e.Hash, e.Seq}
	}
	return out
}

func TestVerifyCatchesEveryKindOfDamage(t *testing.T) {
	s, _ := NewSealer([]byte("0123456789abcdef0123"))
	if p := s.Verify(chain(t, s, 5)); len(p) != 0 {
		t.Fatalf("intact chain reported: %v", p)
	}
	cases := map[string]struct {
		damage func([]Entry) []Entry
		want   string
	}{
		"altered data": {func(e []Entry) []Entry { e[2].Data = strings.Replace(e[2].Data, `"i":2`, `"i":7`, 1); return e }, "altered"},
		"reordered":    {func(e []Entry) []Entry { e[1], e[2] = e[2], e[1]; return e }, "out of order"},
		"deleted":      {func(e []Entry) []Entry { return append(e[:1], e[2:]...) }, "chain broken"},
		"forged": {func(e []Entry) []Entry {
			other, _ := NewSealer([]byte("not the operator's key!"))
			f := chain(t, other, 5)
			return append(e[:3], f[3:]...) // same data, so same hashes: only the MAC differs
		}, "seal invalid"},
		"resealed without key": {func(e []Entry) []Entry {
			e[4].Data = strings.Replace(e[4].Data, `"i":4`, `"i":9`, 1)
			e[4].Hash = chainHash(e[4].Prev, e[4].Data)
			return e
		}, "seal invalid"},
	}
	for name, c := range cases {
		p := s.Verify(c.damage(chain(t, s, 5)))
		found := false
		for _, x := range p {
			found = found || strings.Contains(x.What, c.want)
		}
		if !found {
			t.Errorf("%s: want a %q problem, got %v", name, c.want, p)
		}
	}
	if _, err := NewSealer([]byte("short")); err == nil {
		t.Error("short key accepted")
	}
}
