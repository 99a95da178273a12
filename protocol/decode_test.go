package protocol

import (
	"encoding/json"
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
