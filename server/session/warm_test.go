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
	// Idle long enough that a busy machine's pauses do not retire the
	// goroutine between two tasks of the first part.
	w := newWarmPool(2 * time.Second)

	// Tasks one after the other run on the same, kept goroutine. The one
	// that ran a task is handed the next once it waits again (Go would
	// start a new goroutine if it were not waiting yet, which is right).
	ids := map[string]bool{}
	done := make(chan string)
	w.Go(func() { done <- goroutineID() })
	ids[<-done] = true
	for range 19 {
		deadline := time.Now().Add(10 * time.Second)
		for !w.handOff(func() { done <- goroutineID() }) {
			if time.Now().After(deadline) {
				t.Fatal("no goroutine of the pool waits for a task after one ran")
			}
			time.Sleep(time.Millisecond)
		}
		ids[<-done] = true
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
	deadline := time.Now().Add(15 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left, %d before", runtime.NumGoroutine(), base)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
