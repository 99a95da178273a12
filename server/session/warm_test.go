package session

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// goroutineID reads the running goroutine's number from its stack header.
func goroutineID() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	f := bytes.Fields(b)
	return string(f[1])
}

func TestWarmPoolReusesAndRetires(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWarmPool(100 * time.Millisecond)

	// Tasks one after the other run on the same, kept goroutine.
	ids := map[string]bool{}
	for range 20 {
		done := make(chan string)
		w.Go(func() { done <- goroutineID() })
		ids[<-done] = true
		time.Sleep(time.Millisecond) // let it go back to waiting
	}
	if len(ids) != 1 {
		t.Fatalf("20 tasks in turn ran on %d goroutines", len(ids))
	}

	// Tasks at once each get one; Join waits for them all.
	var wg sync.WaitGroup
	var ran atomic.Int32
	start := make(chan struct{})
	for range 50 {
		w.Join(&wg, func() { <-start; ran.Add(1) })
	}
	close(start)
	wg.Wait()
	if ran.Load() != 50 {
		t.Fatalf("%d of 50 tasks ran", ran.Load())
	}

	// Idle goroutines go away.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left, %d before", runtime.NumGoroutine(), base)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
