package protocol

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// FuzzDecode: no frame can panic the decoder, and whatever it accepts
// re-encodes to a request of a known type.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"type":"hello","id":"1","token":"abc","versions":[1]}`,
		`{"type":"ticket","id":"2","grids":[{"picks":[1,2,3],"stake":100},{"quick_pick":5,"stake":50}]}`,
		`{"type":"confirm","id":"3","ticket":"t"}`,
		`{"type":"choice","id":"4","game":"g","continue":true}`,
		`{"type":"box","id":"5","game":"g","box":3}`,
		`{"type":"replay","id":"6","last":true}`,
		`{"type":"ping"}`, `{`, `[]`, `null`, `{"type":"box","id":"x","box":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			if err.Code == "" || err.Message == "" {
				t.Fatalf("untyped error %+v", err)
			}
			return
		}
		if r.Type == "" || (r.ID == "" && r.Type != TPing) {
			t.Fatalf("accepted a request without type or id: %+v", r)
		}
		if r.Type == TBox && (*r.Box < 0 || *r.Box > 4) {
			t.Fatalf("accepted box %d", *r.Box)
		}
		if r.Type == TTicket && (len(r.Grids) == 0 || len(r.Grids) > MaxGrids) {
			t.Fatalf("accepted %d grids", len(r.Grids))
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDecodeTable(t *testing.T) {
	for frame, code := range map[string]string{
		`{"type":"ping"}`:                                  "",
		`{"type":"balance","id":"1"}`:                      "",
		`{"type":"balance"}`:                               CodeBadRequest,
		`{"type":"nope","id":"1"}`:                         CodeUnknownType,
		`{"type":"hello","id":"1"}`:                        CodeUnauthorized,
		`{"type":"choice","id":"1","game":"g"}`:            CodeBadRequest,
		`{"type":"ticket","id":"1","grids":[{"stake":1}]}`: CodeInvalidPicks,
		`{"type":"set_limit","id":"1","kind":"x"}`:         CodeBadRequest,
		`{"type":"balance","id":"1","unknown":1}`:          CodeBadRequest,
	} {
		_, err := Decode([]byte(frame))
		got := ""
		if err != nil {
			got = err.Code
		}
		if got != code {
			t.Errorf("%s: %q, want %q", frame, got, code)
		}
	}
	big := make([]byte, MaxFrame+1)
	if _, err := Decode(big); err == nil || err.Code != CodeTooLarge {
		t.Errorf("oversized frame: %v", err)
	}
}

// Decoding is strict, and the error of a refused request still carries
// the request's id wherever one can be read.
func TestDecodeStrictKeepsID(t *testing.T) {
	for _, frame := range []string{
		`{"type":"ticket","id":"a1","grids":[{"picks":[1,2,3],"stake":100}],"extra":1}`, // unknown field
		`{"type":"ticket","id":"a2","grids":[{"picks":[1.5,2,3],"stake":100}]}`,         // float pick
		`{"type":"ticket","id":"a3","grids":[{"picks":["1",2,3],"stake":100}]}`,         // string pick
		`{"type":"ticket","id":"a4","grids":[{"picks":[1,2,3],"stake":100.5}]}`,
		`{"type":"ticket","id":"a5","grids":[{"picks":[1,2,3],"stake":"100"}]}`,
		`{"type":"ticket","id":"a6","grids":[{"picks":[1,2,3],"stake":1e2}]}`,
		`{"type":"deposit","id":"a7","amount":1.5,"op":"x"}`,
		`{"type":"deposit","id":"a8","amount":"100","op":"x"}`,
		`{"type":"deposit","id":"a9","amount":1e3,"op":"x"}`,
		`{"type":"deposit","id":"a10","amount":9223372036854775808,"op":"x"}`,
		`{"type":"balance","id":"a11"}]`,              // trailing bytes
		`{"TYPE":"balance","id":"a12"}`,               // upper-case key
		`{"type":"balance","type":"ping","id":"a13"}`, // duplicated key
		`{"type":"deposit","id":"a14","amount":100000001,"op":"x"}`,
		`{"type":"deposit","id":"a15","amount":9223372036854775807,"op":"x"}`,
		`{"type":"set_limit","id":"a16","kind":"loss_limit","value":100000000000000000}`,
		`{"type":"set_limit","id":"a17","kind":"loss_limit","value":1e17}`,
		"{\"type\":\"balance\",\"id\":\"a18\",\"x\":\"\xff\"}", // invalid UTF-8
	} {
		r, err := Decode([]byte(frame))
		if err == nil {
			t.Errorf("accepted %s", frame)
			continue
		}
		want := regexp.MustCompile(`"id":"([^"]*)"`).FindStringSubmatch(frame)[1]
		if r == nil || r.ID != want {
			t.Errorf("%s: error %v without the request's id", frame, err)
		}
	}
	if id := IDOf([]byte(`{"id":"` + strings.Repeat("x", MaxID+1) + `"}`)); id != "" {
		t.Errorf("an over-long id echoed: %q", id)
	}
}
