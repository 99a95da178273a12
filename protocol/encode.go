package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"

	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Encode writes m as JSON.
func Encode(m *Message) ([]byte, error) { return AppendEncode(make([]byte, 0, 128), m) }

// AppendEncode appends m as JSON to dst. The reveal messages (color,
// number, soc_draw) — most of the traffic — are appended by hand: same JSON
// as encoding/json would write for them, without reflection. Everything
// else goes through encoding/json.
func AppendEncode(dst []byte, m *Message) ([]byte, error) {
	if isTimedReveal(m) && safeASCII(m.Game) && safeASCII(m.Color) && safeASCII(m.Effect) {
		return appendReveal(dst, m), nil
	}
	// An Encoder writes into dst where Marshal would return a new slice.
	buf := bytes.NewBuffer(dst)
	var v any = m
	if m.Type == TSettled || m.Type == TTicketDone {
		v = withWin{(*plain)(m), m.Win}
	}
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return dst, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode ends with a newline; Marshal does not
}

// plain is Message without its methods; withWin is one with "win" always
// written, 0 included: a settlement or a ticket's end states its win, so a
// client never has to read a missing field as "nothing won".
type (
	plain   Message
	withWin struct {
		*plain
		Win int64 `json:"win"` // shadows the embedded omitempty one
	}
)

// isTimedReveal: a reveal message with only the fields appendReveal writes.
func isTimedReveal(m *Message) bool {
	switch m.Type {
	case TColor, TNumber, TSoCDraw:
		return m.ID == "" && m.Ticket == ""
	}
	return false
}

func appendReveal(b []byte, m *Message) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, m.Type...)
	b = append(b, '"')
	if m.T != 0 {
		b = append(b, `,"t":`...)
		b = strconv.AppendInt(b, m.T, 10)
	}
	if m.Game != "" {
		b = append(b, `,"game":"`...)
		b = append(b, m.Game...)
		b = append(b, '"')
	}
	b = append(b, `,"pos":`...)
	b = strconv.AppendInt(b, int64(m.Pos), 10)
	if m.Color != "" {
		b = append(b, `,"color":"`...)
		b = append(b, m.Color...)
		b = append(b, '"')
	}
	if m.Number != 0 {
		b = append(b, `,"number":`...)
		b = strconv.AppendInt(b, int64(m.Number), 10)
	}
	if m.Hit {
		b = append(b, `,"hit":true`...)
	}
	if m.Effect != "" {
		b = append(b, `,"effect":"`...)
		b = append(b, m.Effect...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// safeASCII: nothing in s needs escaping in a JSON string.
func safeASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// DecodeMessage parses a server message into m. The reveal messages take a
// hand-written path, the mirror of appendReveal (a client decodes some
// twenty of them per game); anything that path does not recognise — other
// types, other fields, escapes, non-ASCII — goes through the v2 JSON
// package with encoding/json's semantics (v1 options: the same result as
// json.Unmarshal, in less than half the time — a load tester decodes some
// ten such messages per game).
func DecodeMessage(data []byte, m *Message) error {
	*m = Message{}
	if decodeReveal(data, m) {
		return nil
	}
	*m = Message{}
	return jsonv2.Unmarshal(data, m, v1Semantics)
}

var v1Semantics = jsonv1.DefaultOptionsV1()

// decodeReveal parses {"key":value,...} with the keys and value kinds of a
// reveal message, and reports whether it was one.
func decodeReveal(b []byte, m *Message) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	i := 1
	// Each reads one value at b[i:] into its field and moves i past it.
	str := func(dst *string) bool {
		s, n := scanString(b[i:])
		*dst, i = interned(s), i+n
		return n > 0
	}
	num := func(dst *int64) bool {
		v, n := scanInt(b[i:])
		*dst, i = v, i+n
		return n > 0
	}
	for {
		key, n := scanString(b[i:])
		if n == 0 || i+n >= len(b) || b[i+n] != ':' {
			return false
		}
		i += n + 1
		var ok bool
		var v int64
		switch string(key) {
		case "type":
			ok = str(&m.Type)
		case "game":
			ok = str(&m.Game)
		case "color":
			ok = str(&m.Color)
		case "effect":
			ok = str(&m.Effect)
		case "t":
			ok = num(&m.T)
		case "pos":
			ok = num(&v)
			m.Pos = int(v)
		case "number":
			ok = num(&v)
			m.Number = int(v)
		case "hit":
			switch {
			case bytes.HasPrefix(b[i:], []byte("true")):
				m.Hit, i, ok = true, i+4, true
			case bytes.HasPrefix(b[i:], []byte("false")):
				m.Hit, i, ok = false, i+5, true
			}
		}
		if !ok {
			return false
		}
		switch {
		case i == len(b)-1: // the closing brace
			return isTimedReveal(m)
		case b[i] == ',':
			i++
		default:
			return false
		}
	}
}

// scanString reads a JSON string with no escapes and only printable ASCII;
// it returns its contents and the bytes read, 0 if it is not one.
func scanString(b []byte) ([]byte, int) {
	if len(b) < 2 || b[0] != '"' {
		return nil, 0
	}
	for j := 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[1:j], j + 1
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, 0
		}
	}
	return nil, 0
}

// scanInt reads a JSON integer that fits in 18 digits; 0 bytes read if not.
func scanInt(b []byte) (int64, int) {
	j, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		j, neg = 1, true
	}
	start := j
	var v int64
	for j < len(b) && b[j] >= '0' && b[j] <= '9' && j-start < 18 {
		v = v*10 + int64(b[j]-'0')
		j++
	}
	if j == start || (b[start] == '0' && j-start > 1) || (j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E' || (b[j] >= '0' && b[j] <= '9'))) {
		return 0, 0 // empty, leading zero, fraction, exponent or too long: encoding/json decides
	}
	if neg {
		v = -v
	}
	return v, j
}

// interned returns the constant for the few strings reveal messages repeat,
// a copy of anything else.
func interned(s []byte) string {
	switch string(s) {
	case TColor:
		return TColor
	case TNumber:
		return TNumber
	case TSoCDraw:
		return TSoCDraw
	case "blue":
		return "blue"
	case "red":
		return "red"
	case "gold":
		return "gold"
	case "green":
		return "green"
	}
	return string(s)
}
