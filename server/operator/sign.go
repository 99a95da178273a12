// Package operator speaks the seamless-wallet contract of
// protocol/OPERATOR.md: the game server's signed calls to an operator's
// wallet (Client), and a small reference wallet that implements the other
// side with injectable faults (Reference), for tests and load runs.
package operator

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// Headers of a signed call.
const (
	HeaderTimestamp = "X-Keno-Timestamp" // Unix ms
	HeaderSignature = "X-Keno-Signature" // hex(HMAC-SHA256(key, timestamp "." body))
)

// MaxSkew is how far a call's timestamp may be from the receiver's clock.
const MaxSkew = 5 * time.Minute

// Sign returns the signature of body sent at ts (Unix ms).
func Sign(key []byte, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// SignRequest sets the headers that sign req, whose body is body, now.
func SignRequest(req *http.Request, key, body []byte) {
	ts := time.Now().UnixMilli()
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(key, ts, body))
}

// Verify checks a received call's headers against its body: the reason it
// fails, or "" when it is signed by key within MaxSkew of now.
func Verify(key []byte, h http.Header, body []byte, now time.Time) string {
	ts, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return "missing or malformed " + HeaderTimestamp
	}
	if d := now.Sub(time.UnixMilli(ts)); d > MaxSkew || d < -MaxSkew {
		return HeaderTimestamp + " is more than 5 minutes from our clock"
	}
	got, err := hex.DecodeString(h.Get(HeaderSignature))
	want, _ := hex.DecodeString(Sign(key, ts, body))
	if err != nil || !hmac.Equal(got, want) {
		return "bad " + HeaderSignature
	}
	return ""
}
