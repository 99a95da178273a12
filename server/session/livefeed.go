package session

import (
	"keno/engine"
	"sync"
)

// BigWin is a notable win, for the live-ops page.
type BigWin struct {
	At     int64  `json:"at"` // ms
	Player string `json:"player"`
	Game   string `json:"game"`
	Stake  int64  `json:"stake"`
	Win    int64  `json:"win"`
}

// Events keeps the recent notable events of this server and the running
// sums behind its observed RTP.
type Events struct {
	mu     sync.Mutex
	rtp    RTPSums
	byPick [engine.MaxPicks + 1]RTPSums // the same, per pick count
}

// RTPSums accumulate x = win/stake over settled games: the observed RTP
// is Sum/N and its standard error sqrt((SumSq/N − mean²)/N).
type RTPSums struct {
	N     int64   `json:"n"`
	Sum   float64 `json:"sum"`
	SumSq float64 `json:"sum_sq"`
}

func (s *RTPSums) add(x float64) { s.N++; s.Sum += x; s.SumSq += x * x }

func (e *Events) settled(picks int, stake, win int64) {
	x := float64(win) / float64(stake)
	e.mu.Lock()
	e.rtp.add(x)
	if picks >= 0 && picks < len(e.byPick) {
		e.byPick[picks].add(x)
	}
	e.mu.Unlock()
}

// RTP returns the sums so far.
func (e *Events) RTP() RTPSums {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rtp
}

// RTPByPicks returns the sums so far per pick count (index = picks).
func (e *Events) RTPByPicks() [engine.MaxPicks + 1]RTPSums {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byPick
}

// BigWinFactor: a win of at least this many stakes is a big win.
const BigWinFactor = 100

func newEvents() *Events { return &Events{} }
