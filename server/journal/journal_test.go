package journal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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

// Entries follow the derivation in the package comment, computed here
// independently; sealing many in a row (hashers reused) changes nothing.
func TestSealMatchesDocumentedDerivation(t *testing.T) {
	key := []byte("0123456789abcdef0123")
	s, _ := NewSealer(key)
	prev := ""
	for i, e := range chain(t, s, 20) {
		want := fmt.Sprintf(`{"seq":%d,"kind":"bet","body":{"i":%d}}`, i+1, i)
		if e.Data != want || e.Prev != prev {
			t.Fatalf("entry %d: data %s prev %q, want %s after %q", i, e.Data, e.Prev, want, prev)
		}
		sum := sha256.Sum256([]byte(prev + "\n" + e.Data))
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(hex.EncodeToString(sum[:])))
		if e.Hash != hex.EncodeToString(sum[:]) || e.MAC != hex.EncodeToString(mac.Sum(nil)) {
			t.Fatalf("entry %d: hash %s mac %s do not follow the derivation", i, e.Hash, e.MAC)
		}
		prev = e.Hash
	}
}

func BenchmarkSeal(b *testing.B) {
	s, _ := NewSealer([]byte("0123456789abcdef0123"))
	payload := map[string]any{"game": "0ac74fbfdd37865a35-0", "stake": 100, "picks": []int{3, 7, 12, 19, 25, 33}}
	head := Head{Hash: strings.Repeat("ab", 32), Seq: 41}
	b.ReportAllocs()
	for b.Loop() {
		s.Seal(head, "bet", payload)
	}
}
