package engine

import "testing"

// BenchmarkDealSettle: one complete game (deal with the secure generator,
// evaluate, settle) per op. Goal ≥ 1 M/s per core, i.e. ≤ 1000 ns/op.
func BenchmarkDealSettle(b *testing.B) {
	tab := Default()
	src := NewSecureSource()
	picks, _ := ValidatePicks([]int{3, 7, 12, 19, 25, 33, 36, 40})
	var win int64
	b.ReportAllocs()
	for b.Loop() {
		o, _ := tab.Deal(src, picks, 100)
		r, _ := tab.Settle(&o, Choices{Continue: true})
		win += r.Win
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "games/s")
}

// BenchmarkDealSettleFair: the same with the provably fair HMAC stream.
func BenchmarkDealSettleFair(b *testing.B) {
	tab := Default()
	seed := NewServerSeed()
	picks, _ := ValidatePicks([]int{3, 7, 12, 19, 25, 33})
	b.ReportAllocs()
	var nonce uint64
	for b.Loop() {
		nonce++
		o, _ := tab.Deal(NewFairSource(seed, "client", nonce), picks, 100)
		tab.Settle(&o, Choices{})
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "games/s")
}

// BenchmarkPAR: the whole exact report (18 sheets). Goal < 1 s.
func BenchmarkPAR(b *testing.B) {
	for b.Loop() {
		Default().ComputePAR()
	}
}
