package protocol

import (
	"encoding/json"
	"strconv"
)

// Encode writes m as JSON. The reveal messages (color, number, soc_draw) —
// most of the traffic — are appended by hand: same JSON as encoding/json
// would write for them, without reflection. Everything else goes through
// encoding/json.
func Encode(m *Message) ([]byte, error) {
	if isTimedReveal(m) && safeASCII(m.Game) && safeASCII(m.Color) && safeASCII(m.Effect) {
		return appendReveal(make([]byte, 0, 128), m), nil
	}
	return json.Marshal(m)
}

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
