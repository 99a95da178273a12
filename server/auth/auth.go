// Package auth issues and checks the operator-signed player tokens:
//
//	base64url(player "." expiry-unix-seconds) "." base64url(HMAC-SHA256(key, that payload))
//
// The operator's site signs them; the game server only verifies.
package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Errors for rejected tokens.
var (
	ErrMalformed = errors.New("token is malformed")
	ErrSignature = errors.New("token signature is invalid")
	ErrExpired   = errors.New("token has expired")
)

// Signer signs and verifies tokens with one key.
type Signer struct{ key []byte }

// NewSigner returns a signer; the key must be at least 16 bytes.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < 16 {
		return nil, errors.New("auth: token key must be at least 16 bytes")
	}
	return &Signer{key: append([]byte(nil), key...)}, nil
}

var b64 = base64.RawURLEncoding

// Issue returns a token for player valid until exp.
func (s *Signer) Issue(player string, exp time.Time) string {
	payload := b64.EncodeToString([]byte(player + "." + strconv.FormatInt(exp.Unix(), 10)))
	return payload + "." + b64.EncodeToString(s.mac(payload))
}

// Verify returns the player a token names, if it is genuine and current.
func (s *Signer) Verify(token string, now time.Time) (string, error) {
	payload, sig, ok := strings.Cut(token, ".")
	if !ok {
		return "", ErrMalformed
	}
	got, err := b64.DecodeString(sig)
	if err != nil {
		return "", ErrMalformed
	}
	if !hmac.Equal(got, s.mac(payload)) {
		return "", ErrSignature
	}
	raw, err := b64.DecodeString(payload)
	if err != nil {
		return "", ErrMalformed
	}
	i := strings.LastIndexByte(string(raw), '.')
	if i <= 0 {
		return "", ErrMalformed
	}
	exp, err := strconv.ParseInt(string(raw[i+1:]), 10, 64)
	if err != nil {
		return "", ErrMalformed
	}
	if now.Unix() >= exp {
		return "", ErrExpired
	}
	return string(raw[:i]), nil
}

func (s *Signer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}
