package protocol

import (
	"bytes"
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

// A message off the hand-written path, appended into a reused buffer as
// the server does.
func BenchmarkAppendEncodeAccepted(b *testing.B) {
	bal := int64(49_850)
	m := &Message{Type: TAccepted, ID: "7", Ticket: "0ac74fbfdd37865a35", Balance: &bal,
		Games: []GameRef{{Game: "0ac74fbfdd37865a35-0", Nonce: 42, Commit: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendEncode(buf[:0], m)
	}
}

// DecodeMessage gives what encoding/json gives, on the fast path and off it.
func TestDecodeMessageMatchesEncodingJSON(t *testing.T) {
	msgs := []*Message{
		{Type: TColor, T: 1796217620112, Game: "0ac74fbfdd37865a35-0", Pos: 0, Color: "blue"},
		{Type: TNumber, T: 5, Game: "g-1", Pos: 3, Number: 40, Hit: true, Effect: "red"},
		{Type: TSoCDraw, T: 9, Game: "g", Pos: 2, Number: 17, Hit: true},
		{Type: TColor, Game: `we"ird<`, Pos: 1, Color: "green"},
		{Type: TSettled, Game: "g", Win: 120},
	}
	for _, m := range msgs {
		b, _ := Encode(m)
		var got Message
		if err := DecodeMessage(b, &got); err != nil || !reflect.DeepEqual(&got, m) {
			t.Errorf("%s: got %+v, %v", b, got, err)
		}
		// Into a message that held another (Client.Release reuses them):
		// nothing of the earlier one is left.
		bal := int64(7)
		used := Message{Type: TSummary, ID: "9", Balance: &bal, Warnings: []string{"w"}, Pos: 4, Hit: true, Effect: "gold", Text: "x"}
		if err := DecodeMessage(b, &used); err != nil || !reflect.DeepEqual(&used, m) {
			t.Errorf("%s into a used message: got %+v, %v", b, used, err)
		}
	}
	for _, raw := range []string{
		`{"type":"number","pos":1,"hit":true,"id":"7"}`, // an id: not a bare reveal
		`{"type":"number","pos":01}`, `{"type":"number","pos":1.5}`, `{"type":"color","pos":-0}`,
		`{"TYPE":"color","pos":1}`, `{"type":"color","game":"\u0041","pos":1}`, `{"type":"color" ,"pos":1}`,
	} {
		checkDecodeAgainstJSON(t, []byte(raw))
	}
}

func checkDecodeAgainstJSON(t *testing.T, b []byte) {
	var fast, std Message
	errFast := DecodeMessage(b, &fast)
	errStd := json.Unmarshal(b, &std)
	if (errFast == nil) != (errStd == nil) {
		t.Fatalf("%q: DecodeMessage error %v, encoding/json error %v", b, errFast, errStd)
	}
	if errStd == nil && !reflect.DeepEqual(fast, std) {
		t.Fatalf("%q: DecodeMessage %+v, encoding/json %+v", b, fast, std)
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{`{"type":"color","t":17,"game":"g-0","pos":0,"color":"gold"}`,
		`{"type":"number","t":5,"game":"g","pos":3,"number":40,"hit":true,"effect":"red"}`,
		`{"type":"soc_draw","pos":2,"number":7,"hit":false}`, `{"type":"settled","win":3}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodeAgainstJSON)
}

func BenchmarkDecodeNumber(b *testing.B) {
	data, _ := Encode(&Message{Type: TNumber, T: 1796217620112, Game: "0ac74fbfdd37865a35-0", Pos: 3, Number: 40, Hit: true, Effect: "red"})
	b.ReportAllocs()
	var m Message
	for b.Loop() {
		DecodeMessage(data, &m)
	}
}

// A settlement and a ticket's end always state their win, 0 included.
func TestWinAlwaysSent(t *testing.T) {
	for _, typ := range []string{TSettled, TTicketDone} {
		b, err := Encode(&Message{Type: typ, Game: "g", Win: 0})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(`"win":0`)) || bytes.Count(b, []byte(`"win"`)) != 1 {
			t.Errorf("%s: %s", typ, b)
		}
		b, _ = Encode(&Message{Type: typ, Win: 250})
		if !bytes.Contains(b, []byte(`"win":250`)) || bytes.Count(b, []byte(`"win"`)) != 1 {
			t.Errorf("%s: %s", typ, b)
		}
	}
}
