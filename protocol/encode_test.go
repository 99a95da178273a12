package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The hand-written encoding of reveal messages decodes to exactly what
// encoding/json's does, for every field combination they use.
func TestEncodeRevealMatchesEncodingJSON(t *testing.T) {
	msgs := []*Message{
		{Type: TColor, T: 1796217620112, Game: "0ac74fbfdd37865a35-0", Pos: 0, Color: "blue"},
		{Type: TColor, Game: "g", Pos: 9, Color: "gold"},
		{Type: TNumber, T: 5, Game: "g-1", Pos: 3, Number: 40, Hit: true, Effect: "red"},
		{Type: TNumber, T: 5, Game: "g-1", Pos: 4, Number: 1},
		{Type: TSoCDraw, T: 9, Game: "g", Pos: 2, Number: 17, Hit: true},
		{Type: TColor, Game: `we"ird<`, Pos: 1, Color: "green"}, // falls back to encoding/json
		{Type: TSettled, Game: "g", Win: 120},                   // not a reveal message
	}
	for _, m := range msgs {
		fast, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		std, _ := json.Marshal(m)
		var a, b map[string]any
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("%s is not JSON: %v", fast, err)
		}
		json.Unmarshal(std, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("fast %s\n std %s", fast, std)
		}
	}
}

func BenchmarkEncodeNumber(b *testing.B) {
	m := &Message{Type: TNumber, T: 1796217620112, Game: "0ac74fbfdd37865a35-0", Pos: 3, Number: 40, Hit: true, Effect: "red"}
	b.ReportAllocs()
	for b.Loop() {
		Encode(m)
	}
}
