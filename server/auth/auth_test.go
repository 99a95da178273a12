package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

func TestTokens(t *testing.T) {
	s, _ := NewSigner([]byte("0123456789abcdef"))
	other, _ := NewSigner([]byte("fedcba9876543210"))
	now := time.Now()
	tok := s.Issue("alice", now.Add(time.Hour))
	c, err := s.VerifyClaims(tok, now)
	if err != nil || c.Player != "alice" || len(c.Session) != 18 {
		t.Fatalf("valid token: %+v %v", c, err)
	}
	if _, err := s.Verify(tok, now.Add(2*time.Hour)); err != ErrExpired {
		t.Errorf("stale token: %v", err)
	}
	if _, err := other.Verify(tok, now); err != ErrSignature {
		t.Errorf("foreign key of the same id: %v", err)
	}
	for _, bad := range []string{"", "x", "a.b", "!!.!!", tok + "x"} {
		if _, err := s.Verify(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Keys rotate: a token signed with any key of the ring is accepted; once a
// key is retired (left out of the ring), its tokens say so. Other
// algorithms are refused, by name.
func TestKeyRotationAndAlgorithms(t *testing.T) {
	old := Key{"2025-11", []byte("the november key, long enough")}
	cur := Key{"2025-12", []byte("the december key, long enough")}
	before, _ := NewKeyring([]Key{old})
	ring, _ := NewKeyring([]Key{cur, old})
	after, _ := NewKeyring([]Key{cur})
	now := time.Now()
	tok := before.Issue("carl", now.Add(time.Hour))
	if p, err := ring.Verify(tok, now); err != nil || p != "carl" {
		t.Fatalf("a token of the previous key during the rotation: %q %v", p, err)
	}
	if _, err := after.Verify(tok, now); !errors.Is(err, ErrKey) {
		t.Errorf("a token of a retired key: %v", err)
	}
	if p, err := ring.Verify(ring.Issue("dora", now.Add(time.Hour)), now); err != nil || p != "dora" {
		t.Errorf("a token of the current key: %v", err)
	}
	// none, and an asymmetric key where HS256 is expected.
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "eve", "exp": now.Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	es := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": "eve", "exp": now.Add(time.Hour).Unix()})
	es.Header["kid"] = "2025-12"
	esTok, _ := es.SignedString(ek)
	for name, tok := range map[string]string{"none": none, "ES256": esTok} {
		if _, err := ring.Verify(tok, now); !errors.Is(err, ErrAlg) {
			t.Errorf("alg %s: %v", name, err)
		}
	}
	if _, err := ParseKeys("a:0123456789abcdef,b:fedcba9876543210"); err != nil {
		t.Error(err)
	}
	if _, err := ParseKeys("nokeyid"); err == nil {
		t.Error("a key without an id accepted")
	}
}

// With the operator's JWKS, RS256 and ES256 tokens verify by their kid; a
// kid the set lacks is an unknown key; without a JWKS they are refused.
func TestJWKS(t *testing.T) {
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwk, err := jwkset.NewJWKFromKey(ek.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "op-1", ALG: jwkset.AlgES256}})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(map[string]any{"keys": []any{jwk.Marshal()}})
	file := filepath.Join(t.TempDir(), "jwks.json")
	os.WriteFile(file, set, 0o600)
	s, _ := NewSigner([]byte("0123456789abcdef"))
	sign := func(kid string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": "fay", "sid": "x1", "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = kid
		out, _ := tok.SignedString(ek)
		return out
	}
	if _, err := s.Verify(sign("op-1"), time.Now()); !errors.Is(err, ErrAlg) {
		t.Errorf("ES256 without a JWKS: %v", err)
	}
	if err := s.UseJWKS(context.Background(), file); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Verify(sign("op-1"), time.Now()); err != nil || p != "fay" {
		t.Errorf("ES256 with the JWKS: %q %v", p, err)
	}
	if _, err := s.Verify(sign("op-2"), time.Now()); !errors.Is(err, ErrKey) {
		t.Errorf("a kid the JWKS lacks: %v", err)
	}
}
