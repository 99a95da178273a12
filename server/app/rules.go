package app

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"

	"keno/engine"
)

// rulesJSON is what the game's rules screen shows: the engine's prize
// table as loaded and its exact PAR sheet (return to player, odds and
// maximum win per pick count and stake). Computed once (well under a
// second), started at boot so the first player never waits for it.
var rulesJSON = sync.OnceValues(func() ([]byte, error) {
	t := engine.Default()
	var par bytes.Buffer
	if err := t.ComputePAR().WriteJSON(&par); err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Table json.RawMessage `json:"table"`
		PAR   json.RawMessage `json:"par"`
	}{t.Source(), par.Bytes()})
})

// rules serves GET /api/rules.
func rules(w http.ResponseWriter, r *http.Request) {
	b, err := rulesJSON()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Write(b)
}
