package session

import (
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
	mu  sync.Mutex
	rtp RTPSums
}

// RTPSums accumulate x = win/stake over settled games: the observed RTP
// is Sum/N and its standard error sqrt((SumSq/N − mean²)/N).
type RTPSums struct {
	N     int64   `json:"n"`
	Sum   float64 `json:"sum"`
	SumSq float64 `json:"sum_sq"`
}

func (e *Events) settled(stake, win int64) {
	x := float64(win) / float64(stake)
	e.mu.Lock()
	e.rtp.N++
	e.rtp.Sum += x
	e.rtp.SumSq += x * x
	e.mu.Unlock()
}

// RTP returns the sums so far.
func (e *Events) RTP() RTPSums {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rtp
}

// BigWinFactor: a win of at least this many stakes is a big win.
const BigWinFactor = 100

// BigWinsKey is the Redis list of the latest big wins, cluster-wide.
const BigWinsKey = "keno:bigwins"

func newEvents() *Events { return &Events{} }
