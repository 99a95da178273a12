package session

import (
	"sync"
	"time"
)

// warmPool runs short tasks on goroutines kept between tasks. A new
// goroutine starts with a small stack and grows it, copying it each time,
// on its first Redis call (several kilobytes deep); the requests, the games
// and their parallel reads do so hundreds of times a second, and the copies
// took ~5 % of the server's CPU. A goroutine that has finished a task waits
// a while for the next one, its stack still grown.
type warmPool struct {
	tasks chan func()
	idle  time.Duration
}

func newWarmPool(idle time.Duration) *warmPool {
	return &warmPool{tasks: make(chan func()), idle: idle}
}

// Go runs f on an idle goroutine of the pool, or on a new one.
func (w *warmPool) Go(f func()) {
	if !w.handOff(f) {
		go w.work(f)
	}
}

// handOff gives f to a goroutine waiting for a task, if one is.
func (w *warmPool) handOff(f func()) bool {
	select {
	case w.tasks <- f:
		return true
	default:
		return false
	}
}

// Join runs f in the pool as one of wg's.
func (w *warmPool) Join(wg *sync.WaitGroup, f func()) {
	wg.Add(1)
	w.Go(func() {
		defer wg.Done()
		f()
	})
}

func (w *warmPool) work(f func()) {
	t := time.NewTimer(w.idle)
	defer t.Stop()
	for {
		f()
		t.Reset(w.idle)
		select {
		case f = <-w.tasks:
		case <-t.C:
			return
		}
	}
}
