// Package journal seals the per-player record of bets, outcomes, choices
// and money movements ("scellement"). Entries form a hash chain:
//
//	hash_n = SHA-256( prev_hash_hex "\n" data )   (prev of the first entry is "")
//	mac_n  = HMAC-SHA256( server key, hash_n_hex )
//
// where data is the entry's JSON, which carries its own sequence number.
// Any change to an entry breaks its hash, any reordering or deletion breaks
// the chain, and without the key nobody can forge a consistent replacement.
// The wallet appends entries in the same atomic Lua script as the money
// operation they describe (compare-and-set on the chain head), so the
// journal and the books cannot disagree.
package journal

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"sync"
	"unsafe"
)

// Entry is one sealed record as stored.
type Entry struct {
	Seq  int64  `json:"seq"`
	Prev string `json:"prev"`
	Hash string `json:"hash"`
	MAC  string `json:"mac"`
	Data string `json:"data"`
}

// Head is the end of a chain: the last hash and its sequence number.
type Head struct {
	Hash string
	Seq  int64
}

// Sealer computes hashes and MACs with the operator's key.
type Sealer struct {
	key  []byte
	macs sync.Pool // HMACs keyed with key, reused: every bet and payout seals an entry
}

// NewSealer returns a sealer for key (at least 16 bytes).
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) < 16 {
		return nil, fmt.Errorf("journal: seal key must be at least 16 bytes, got %d", len(key))
	}
	s := &Sealer{key: append([]byte(nil), key...)}
	s.macs.New = func() any { return hmac.New(sha256.New, s.key) }
	return s, nil
}

// Seal builds the next entry after head for a payload. The payload is
// encoded with the sequence number added as "seq".
func (s *Sealer) Seal(head Head, kind string, payload any) (Entry, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return Entry{}, err
	}
	seq := head.Seq + 1
	// Prefix the sequence and kind so they are covered by the hash and
	// readable without decoding the payload.
	b := make([]byte, 0, len(body)+len(kind)+40)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"kind":`...)
	b = strconv.AppendQuote(b, kind)
	b = append(b, `,"body":`...)
	b = append(b, body...)
	b = append(b, '}')
	data := string(b)
	chained := chainHash(head.Hash, data)
	return Entry{Seq: seq, Prev: head.Hash, Hash: chained, MAC: s.mac(chained), Data: data}, nil
}

var hashers = sync.Pool{New: func() any { return sha256.New() }}

func chainHash(prev, data string) string {
	return hexSum(hashers.Get().(hash.Hash), &hashers, prev, "\n", data)
}

func (s *Sealer) mac(chained string) string {
	return hexSum(s.macs.Get().(hash.Hash), &s.macs, chained)
}

// hexSum hashes parts with h, gives h back to pool and returns the sum in hex.
// The parts are hashed in place: []byte(p) would copy each (a game
// record, tagged with every bet, is half a kilobyte), and a hash only
// reads what it is given.
func hexSum(h hash.Hash, pool *sync.Pool, parts ...string) string {
	h.Reset()
	for _, p := range parts {
		h.Write(unsafe.Slice(unsafe.StringData(p), len(p)))
	}
	var sum [sha256.Size]byte
	out := hex.EncodeToString(h.Sum(sum[:0]))
	pool.Put(h)
	return out
}

// Tag seals a stored copy of something the journal holds (a game record,
// its settlement): HMAC-SHA256 over the parts, each followed by a newline.
// A copy whose tag does not match was altered outside the server.
func (s *Sealer) Tag(parts ...string) string {
	lines := make([]string, 0, 2*len(parts))
	for _, p := range parts {
		lines = append(lines, p, "\n")
	}
	return hexSum(s.macs.Get().(hash.Hash), &s.macs, lines...)
}

// ValidTag reports whether tag seals parts.
func (s *Sealer) ValidTag(tag string, parts ...string) bool {
	return hmac.Equal([]byte(tag), []byte(s.Tag(parts...)))
}

// Problem is one defect found by Verify.
type Problem struct {
	Index int    // position in the stored order; -1: not about one entry (the account, a stored record)
	Seq   int64  // the entry's claimed sequence number
	What  string // what is wrong
}

func (p Problem) String() string {
	if p.Index < 0 {
		return p.What
	}
	return fmt.Sprintf("entry #%d (seq %d): %s", p.Index, p.Seq, p.What)
}

// Verify walks a chain in stored order and reports every broken, reordered,
// missing or altered entry. An empty result means the chain is intact.
func (s *Sealer) Verify(entries []Entry) []Problem { return s.VerifyFrom(Head{}, entries) }

// VerifyFrom walks entries that continue the chain after head (the zero
// Head: from the first entry).
func (s *Sealer) VerifyFrom(head Head, entries []Entry) []Problem {
	var out []Problem
	prev, want := head.Hash, head.Seq+1
	for i, e := range entries {
		var meta struct {
			Seq int64 `json:"seq"`
		}
		switch {
		case json.Unmarshal([]byte(e.Data), &meta) != nil:
			out = append(out, Problem{i, e.Seq, "data is not valid JSON"})
		case meta.Seq != e.Seq:
			out = append(out, Problem{i, e.Seq, fmt.Sprintf("data says seq %d", meta.Seq)})
		}
		if e.Seq != want {
			out = append(out, Problem{i, e.Seq, fmt.Sprintf("out of order or missing: expected seq %d", want)})
		}
		if e.Prev != prev {
			out = append(out, Problem{i, e.Seq, "chain broken: prev does not match the previous entry's hash"})
		}
		if h := chainHash(e.Prev, e.Data); h != e.Hash {
			out = append(out, Problem{i, e.Seq, "altered: hash does not match the data"})
		}
		if !hmac.Equal([]byte(s.mac(e.Hash)), []byte(e.MAC)) {
			out = append(out, Problem{i, e.Seq, "seal invalid: MAC does not match (forged or wrong key)"})
		}
		prev, want = e.Hash, e.Seq+1
	}
	return out
}
