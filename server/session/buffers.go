package session

import "sync"

// bufferPool lends byte buffers needed only for a moment — a message being
// encoded, a burst being held — so that an idle connection holds none. A
// buffer grown past maxKept by a rare large message is dropped, not kept.
type bufferPool struct{ pool sync.Pool }

const maxKept = 64 << 10

func newBufferPool(size int) *bufferPool {
	p := &bufferPool{}
	p.pool.New = func() any { b := make([]byte, 0, size); return &b }
	return p
}

// get returns an empty buffer.
func (p *bufferPool) get() *[]byte { return p.pool.Get().(*[]byte) }

// put takes a buffer back, emptied.
func (p *bufferPool) put(b *[]byte) {
	if cap(*b) <= maxKept {
		*b = (*b)[:0]
		p.pool.Put(b)
	}
}
