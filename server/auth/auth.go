// Package auth issues and checks the operator's player tokens: JWTs
// (github.com/golang-jwt/jwt/v5) signed HS256 with a key named by its key
// id ("kid"), so that keys can rotate — several are accepted at once, the
// first signs — or, when the operator publishes a JWKS (a file or a URL,
// read by github.com/MicahParks/keyfunc), RS256 or ES256 with its public
// keys. Claims: sub (the player), exp, sid (the session, which the
// operator may revoke), and optionally currency and lang.
package auth

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// Errors for refused tokens; each says which.
var (
	ErrMalformed = errors.New("token is malformed")
	ErrSignature = errors.New("token signature is invalid")
	ErrExpired   = errors.New("token has expired")
	ErrAlg       = errors.New("token is signed with an algorithm this server does not accept (HS256; RS256 or ES256 with the operator's JWKS)")
	ErrKey       = errors.New("token is signed with a key that is retired or unknown")
	ErrRevoked   = errors.New("token's session was revoked by the operator")
)

// Claims are what a token says.
type Claims struct {
	Player   string
	Session  string // sid
	Currency string
	Lang     string
}

// Key is one signing key and its id.
type Key struct {
	ID     string
	Secret []byte
}

// Signer signs with its first key and verifies with any of them.
type Signer struct {
	keys []Key
	byID map[string][]byte
	jwks keyfunc.Keyfunc // the operator's public keys (RS256, ES256), if any
}

// UseJWKS accepts RS256 and ES256 tokens signed with the keys of a JWKS:
// a file's JSON, or an https URL refreshed in the background.
func (s *Signer) UseJWKS(ctx context.Context, source string) error {
	var err error
	if strings.HasPrefix(source, "https://") || strings.HasPrefix(source, "http://") {
		s.jwks, err = keyfunc.NewDefaultCtx(ctx, []string{source})
	} else {
		var raw []byte
		if raw, err = os.ReadFile(source); err == nil {
			s.jwks, err = keyfunc.NewJWKSetJSON(raw)
		}
	}
	return err
}

// NewSigner returns a signer over one key, id "k1".
func NewSigner(key []byte) (*Signer, error) { return NewKeyring([]Key{{ID: "k1", Secret: key}}) }

// NewKeyring returns a signer over several keys (the first signs).
func NewKeyring(keys []Key) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("auth: no token key")
	}
	s := &Signer{byID: map[string][]byte{}}
	for _, k := range keys {
		if len(k.Secret) < 16 {
			return nil, fmt.Errorf("auth: token key %q must be at least 16 bytes", k.ID)
		}
		if k.ID == "" || s.byID[k.ID] != nil {
			return nil, fmt.Errorf("auth: token key ids must be distinct and not empty (%q)", k.ID)
		}
		s.byID[k.ID] = append([]byte(nil), k.Secret...)
		s.keys = append(s.keys, Key{k.ID, s.byID[k.ID]})
	}
	return s, nil
}

// ParseKeys reads "id:secret,id:secret" (KENO_TOKEN_KEYS).
func ParseKeys(list string) ([]Key, error) {
	var out []Key
	for _, item := range strings.Split(list, ",") {
		id, secret, ok := strings.Cut(strings.TrimSpace(item), ":")
		if !ok || id == "" || secret == "" {
			return nil, fmt.Errorf("each key is id:secret, got %q", item)
		}
		out = append(out, Key{id, []byte(secret)})
	}
	return out, nil
}

type claims struct {
	jwt.RegisteredClaims
	SID      string `json:"sid,omitempty"`
	Currency string `json:"currency,omitempty"`
	Lang     string `json:"lang,omitempty"`
}

// Issue returns a token for player valid until exp, with a new session id.
func (s *Signer) Issue(player string, exp time.Time) string {
	var b [9]byte
	rand.Read(b[:])
	t, _ := s.IssueClaims(Claims{Player: player, Session: hex.EncodeToString(b[:])}, exp)
	return t
}

// IssueClaims signs c, valid until exp, with the current key.
func (s *Signer) IssueClaims(c Claims, exp time.Time) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{
		RegisteredClaims: jwt.RegisteredClaims{Subject: c.Player, ExpiresAt: jwt.NewNumericDate(exp)},
		SID:              c.Session, Currency: c.Currency, Lang: c.Lang})
	t.Header["kid"] = s.keys[0].ID
	return t.SignedString(s.keys[0].Secret)
}

// Verify returns the player a token names, if it is genuine and current.
func (s *Signer) Verify(token string, now time.Time) (string, error) {
	c, err := s.VerifyClaims(token, now)
	return c.Player, err
}

// VerifyClaims checks a token and returns its claims; the error says why
// a token is refused.
func (s *Signer) VerifyClaims(token string, now time.Time) (Claims, error) {
	var cl claims
	algs := []string{"HS256"}
	if s.jwks != nil {
		algs = append(algs, "RS256", "ES256")
	}
	_, err := jwt.ParseWithClaims(token, &cl, func(t *jwt.Token) (any, error) {
		switch t.Method.Alg() {
		case "HS256":
			kid, _ := t.Header["kid"].(string)
			if key := s.byID[kid]; key != nil {
				return key, nil
			}
			return nil, ErrKey
		case "RS256", "ES256":
			if s.jwks == nil {
				return nil, ErrAlg
			}
			key, err := s.jwks.Keyfunc(t)
			if err != nil {
				return nil, ErrKey
			}
			return key, nil
		}
		return nil, ErrAlg
	}, jwt.WithTimeFunc(func() time.Time { return now }), jwt.WithExpirationRequired(), jwt.WithValidMethods(algs))
	switch {
	case err == nil:
	case errors.Is(err, ErrAlg) || errors.Is(err, jwt.ErrTokenSignatureInvalid) && strings.Contains(err.Error(), "signing method"):
		return Claims{}, ErrAlg
	case errors.Is(err, ErrKey):
		return Claims{}, ErrKey
	case errors.Is(err, jwt.ErrTokenExpired):
		return Claims{}, ErrExpired
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return Claims{}, ErrSignature
	default:
		return Claims{}, ErrMalformed
	}
	if cl.Subject == "" {
		return Claims{}, ErrMalformed
	}
	return Claims{Player: cl.Subject, Session: cl.SID, Currency: cl.Currency, Lang: cl.Lang}, nil
}
