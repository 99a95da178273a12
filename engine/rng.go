package engine

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	mrand "math/rand/v2"
	"strconv"
)

// Source yields uniformly distributed 32-bit words. All sampling in the
// engine goes through Uniform, so any Source gets unbiased draws.
type Source interface {
	Uint32() uint32
}

// Uniform returns a uniform integer in [0, n) by rejection sampling: words at
// or above the largest multiple of n below 2^32 are discarded, so there is no
// modulo bias. n must be in [1, 2^32).
func Uniform(src Source, n uint32) uint32 {
	limit := rejectionLimit(n)
	for {
		w := src.Uint32()
		if uint64(w) < limit {
			return w % n
		}
	}
}

// rejectionLimit is 2^32 − (2^32 mod n): the count of words that map evenly.
func rejectionLimit(n uint32) uint64 {
	const span = 1 << 32
	return span - span%uint64(n)
}

// bernoulli is true with probability r.Num/r.Den.
func bernoulli(src Source, r Ratio) bool {
	return int64(Uniform(src, uint32(r.Den))) < r.Num
}

// SecureSource is a ChaCha8 stream (math/rand/v2, a cryptographically strong
// generator) keyed from the operating system's CSPRNG. It is not safe for
// concurrent use: give each goroutine its own.
type SecureSource struct{ c *mrand.ChaCha8 }

// NewSecureSource keys a new generator from crypto/rand.
func NewSecureSource() *SecureSource {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		panic("engine: crypto/rand failed: " + err.Error())
	}
	return &SecureSource{mrand.NewChaCha8(seed)}
}

// Uint32 implements Source.
func (s *SecureSource) Uint32() uint32 { return uint32(s.c.Uint64() >> 32) }

// FairSource is the provably fair stream: the words are the bytes of
//
//	HMAC-SHA256(key = server seed, message = client seed ":" nonce ":" block)
//
// for block = 0, 1, 2, … (nonce and block in decimal ASCII), read as
// big-endian uint32 words in order. See FAIRNESS in protocol/README.md for
// the whole derivation of a game from that stream.
type FairSource struct {
	mac   hash.Hash
	msg   []byte // client seed ":" nonce ":", then the block number
	plen  int    // length of the prefix within msg
	block uint64
	buf   [sha256.Size]byte
	off   int
}

// NewFairSource starts the stream for one game.
func NewFairSource(serverSeed []byte, clientSeed string, nonce uint64) *FairSource {
	prefix := append([]byte(clientSeed), ':')
	prefix = strconv.AppendUint(prefix, nonce, 10)
	prefix = append(prefix, ':')
	return &FairSource{mac: hmac.New(sha256.New, serverSeed), msg: prefix, plen: len(prefix), off: sha256.Size}
}

// Uint32 implements Source.
func (f *FairSource) Uint32() uint32 {
	if f.off == sha256.Size {
		f.msg = strconv.AppendUint(f.msg[:f.plen], f.block, 10)
		f.mac.Reset()
		f.mac.Write(f.msg)
		f.mac.Sum(f.buf[:0])
		f.block++
		f.off = 0
	}
	w := binary.BigEndian.Uint32(f.buf[f.off:])
	f.off += 4
	return w
}

// NewServerSeed returns 32 random bytes for a provably fair seed.
func NewServerSeed() []byte {
	seed := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		panic("engine: crypto/rand failed: " + err.Error())
	}
	return seed
}

// SeedCommitment is the hex SHA-256 of a server seed, published before the
// seed is used so the operator cannot change it afterwards.
func SeedCommitment(serverSeed []byte) string {
	sum := sha256.Sum256(serverSeed)
	return hex.EncodeToString(sum[:])
}

// DecodeSeed parses a hex server seed as revealed to players.
func DecodeSeed(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, errors.New("server seed must be non-empty hex")
	}
	return b, nil
}
