package auth

import (
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	s, _ := NewSigner([]byte("0123456789abcdef"))
	other, _ := NewSigner([]byte("fedcba9876543210"))
	now := time.Now()
	tok := s.Issue("alice", now.Add(time.Hour))
	if p, err := s.Verify(tok, now); err != nil || p != "alice" {
		t.Fatalf("valid token: %q %v", p, err)
	}
	if _, err := s.Verify(tok, now.Add(2*time.Hour)); err != ErrExpired {
		t.Errorf("stale token: %v", err)
	}
	if _, err := other.Verify(tok, now); err != ErrSignature {
		t.Errorf("foreign key: %v", err)
	}
	bob := s.Issue("bob", now.Add(time.Hour))
	forged := bob[:len(bob)-43] + tok[len(tok)-43:] // bob's payload, alice's signature
	if _, err := s.Verify(forged, now); err != ErrSignature {
		t.Errorf("spliced token: %v", err)
	}
	for _, bad := range []string{"", "x", "a.b", "!!.!!", tok + "x"} {
		if _, err := s.Verify(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
