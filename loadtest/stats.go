package main

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latencies are recorded in microseconds, up to one minute.
const maxMicros = int64(60 * time.Second / time.Microsecond)

type hdrHist = hdrhistogram.Histogram

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, maxMicros, 3) }

// Stats is everything one process measured. It is merged across processes
// (children send theirs to the parent as JSON).
type Stats struct {
	mu sync.Mutex

	Connect   *hdrhistogram.Histogram           `json:"-"`
	Accept    *hdrhistogram.Histogram           `json:"-"` // confirm → accepted
	Lateness  *hdrhistogram.Histogram           `json:"-"` // timed message receipt − its schedule
	Settle    *hdrhistogram.Histogram           `json:"-"` // last player action → settled
	Snapshots map[string]*hdrhistogram.Snapshot `json:"hist"`

	Errors       map[string]int64 `json:"errors"`   // by code, unexpected ones only
	Expected     map[string]int64 `json:"expected"` // refusals the scenario provokes on purpose (flooders, bad input)
	Games        int64            `json:"games"`
	Tickets      int64            `json:"tickets"`
	Stakes       int64            `json:"stakes"`
	Wins         int64            `json:"wins"`
	ExpectedWins float64          `json:"expected_wins"` // Σ stake × exact RTP of (picks, strategy)
	SumX         float64          `json:"sum_x"`         // Σ win/stake
	SumExpX      float64          `json:"sum_exp_x"`     // Σ its exact mean
	SumExpVar    float64          `json:"sum_exp_var"`   // Σ its exact variance
	MaxX         float64          `json:"max_x"`         // the largest win/stake of one game
	Reconnects   int64            `json:"reconnects"`
	Resumed      int64            `json:"resumed"`
	Players      int64            `json:"players"`
	Connected    int64            `json:"connected"`
	IdlePlayers  int64            `json:"idle_players"`
	Mismatches   []string         `json:"mismatches,omitempty"` // client view ≠ wallet
	Unsettled    int64            `json:"unsettled"`            // games accepted but never seen settled
	Abandoned    int64            `json:"abandoned"`            // games in play at the run's hard stop
	DoubleSettle int64            `json:"double_settled"`
	LostAcks     []string         `json:"lost_acks,omitempty"` // accepted games the wallet no longer knows
	PerSecond    []int64          `json:"per_second"`          // games settled in each second of the run
	start        time.Time

	// The live line's window: what was recorded since its last tick, so a
	// burst shows when it happens instead of being averaged into the run.
	winLateness, winAccept *hdrHist
}

func newStats() *Stats {
	return &Stats{Connect: newHist(), Accept: newHist(), Lateness: newHist(), Settle: newHist(),
		Errors: map[string]int64{}, Expected: map[string]int64{}, start: time.Now(),
		winLateness: newHist(), winAccept: newHist()}
}

func record(h *hdrhistogram.Histogram, d time.Duration) {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	if us > maxMicros {
		us = maxMicros
	}
	h.RecordValue(us)
}

// What a player measures.
type measure int

const (
	connectTime measure = iota
	acceptTime
	lateness
	settleTime
)

func (s *Stats) observe(m measure, d time.Duration) {
	s.mu.Lock()
	switch m {
	case connectTime:
		record(s.Connect, d)
	case acceptTime:
		record(s.Accept, d)
		record(s.winAccept, d)
	case lateness:
		record(s.Lateness, d)
		record(s.winLateness, d)
	case settleTime:
		record(s.Settle, d)
	}
	s.mu.Unlock()
}

func (s *Stats) error(code string, expected bool) {
	s.mu.Lock()
	if expected {
		s.Expected[code]++
	} else {
		s.Errors[code]++
	}
	s.mu.Unlock()
}

func (s *Stats) settled(stake, win int64, exact figure) {
	s.mu.Lock()
	s.Games++
	s.Stakes += stake
	s.Wins += win
	s.ExpectedWins += float64(stake) * exact.mean
	x := float64(win) / float64(stake)
	s.SumX += x
	s.MaxX = max(s.MaxX, x)
	s.SumExpX += exact.mean
	s.SumExpVar += exact.variance
	sec := int(time.Since(s.start).Seconds())
	for len(s.PerSecond) <= sec {
		s.PerSecond = append(s.PerSecond, 0)
	}
	s.PerSecond[sec]++
	s.mu.Unlock()
}

func (s *Stats) add(f func(*Stats)) {
	s.mu.Lock()
	f(s)
	s.mu.Unlock()
}

// hists names the histograms, for export and merge.
func (s *Stats) hists() map[string]*hdrHist {
	return map[string]*hdrHist{"connect": s.Connect, "accept": s.Accept, "lateness": s.Lateness, "settle": s.Settle}
}

// export prepares the histograms for JSON.
func (s *Stats) export() {
	s.Snapshots = map[string]*hdrhistogram.Snapshot{}
	for name, h := range s.hists() {
		s.Snapshots[name] = h.Export()
	}
}

// merge adds another process's figures.
func (s *Stats) merge(o *Stats) {
	mine := s.hists()
	for name, snap := range o.Snapshots {
		if h := mine[name]; h != nil {
			h.Merge(hdrhistogram.Import(snap))
		}
	}
	for k, v := range o.Errors {
		s.Errors[k] += v
	}
	for k, v := range o.Expected {
		s.Expected[k] += v
	}
	s.Games += o.Games
	s.Tickets += o.Tickets
	s.Stakes += o.Stakes
	s.Wins += o.Wins
	s.ExpectedWins += o.ExpectedWins
	s.SumX += o.SumX
	s.SumExpX += o.SumExpX
	s.SumExpVar += o.SumExpVar
	s.MaxX = max(s.MaxX, o.MaxX)
	s.Reconnects += o.Reconnects
	s.Resumed += o.Resumed
	s.Players += o.Players
	s.Connected += o.Connected
	s.IdlePlayers += o.IdlePlayers
	s.Mismatches = append(s.Mismatches, o.Mismatches...)
	s.Unsettled += o.Unsettled
	s.Abandoned += o.Abandoned
	s.DoubleSettle += o.DoubleSettle
	s.LostAcks = append(s.LostAcks, o.LostAcks...)
	for i, v := range o.PerSecond {
		for len(s.PerSecond) <= i {
			s.PerSecond = append(s.PerSecond, 0)
		}
		s.PerSecond[i] += v
	}
}

// RTPCheck compares the observed return with the exact one for the games
// actually played (their pick counts, stakes and choices). The confidence
// interval uses the exact variance: a sample of a few thousand games rarely
// contains the jackpots, so its own variance would be far too small.
//
// The win of one game is very skewed (a 10 000× prize comes once in a few
// million games), so one jackpot in a run moves the mean by several of the
// interval's widths, and a normal interval errs high more often than it
// says. So the upper side is checked without the run's largest win: a sum
// less its largest term can only be smaller, which keeps the check
// conservative, while anything that pays too much over many games still
// shows. The lower side needs no such care: skew makes low means rarer.
type RTPCheck struct {
	Observed float64 `json:"observed"`   // Σ wins / Σ stakes
	Exact    float64 `json:"exact"`      // the same, expected
	Mean     float64 `json:"mean_x"`     // mean win/stake per game
	ExactX   float64 `json:"exact_x"`    // its exact expectation
	HalfCI   float64 `json:"half_ci_99"` // 99% half-width of the per-game mean
	MaxX     float64 `json:"max_x"`      // the largest win/stake of one game
	LessMax  float64 `json:"mean_x_less_max"`
	Within   bool    `json:"within"`
}

func (s *Stats) rtp() RTPCheck {
	if s.Games < 2 || s.Stakes == 0 {
		return RTPCheck{}
	}
	n := float64(s.Games)
	mean, exact := s.SumX/n, s.SumExpX/n
	lessMax := (s.SumX - s.MaxX) / n
	half := 2.576 * math.Sqrt(s.SumExpVar) / n
	return RTPCheck{Observed: float64(s.Wins) / float64(s.Stakes), Exact: s.ExpectedWins / float64(s.Stakes),
		Mean: mean, ExactX: exact, HalfCI: half, MaxX: s.MaxX, LessMax: lessMax,
		Within: mean >= exact-half && lessMax <= exact+half}
}

// Percentiles of a histogram in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	Max   float64 `json:"max_ms"`
}

func percentiles(h *hdrhistogram.Histogram) Percentiles {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Percentiles{Count: h.TotalCount(), P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)),
		P99: ms(h.ValueAtQuantile(99)), P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max())}
}

func sortedKeys(m map[string]int64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
