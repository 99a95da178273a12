package session

import (
	"errors"
	"net"
	"sync"
	"time"
)

// writer owns a connection's writes, under the WebSocket library (which
// frames each message and hands the bytes to Write). Write only queues;
// a flusher goroutine — started when the queue stops being empty, gone
// when it is empty again — writes everything queued in one system call.
// So messages that fall due together leave in one write because the
// flusher drains the queue before it writes, not because callers remember
// to hold and let go: the bursts of a game (its start and first colour, a
// result and the offer after it, the settlement and the ticket's end, a
// whole resumed game at once) are queued before the game goroutine next
// waits, which is when the flusher runs. On loopback and on busy servers
// the write system call is most of what a small message costs.
//
// An idle connection holds no goroutine and no buffer here. A peer that
// stops reading blocks the flusher, never a sender; past maxQueued bytes
// the connection is closed as too slow.
type writer struct {
	conn net.Conn

	mu       sync.Mutex
	onError  func()     // the session ends (the connection is closed by then)
	queue    *[]byte    // from writeBuffers; nil when empty
	flushing bool       // a flusher runs
	idle     *sync.Cond // made by Close, which waits on it for the flusher to end
	err      error      // the first write error: later writes fail at once
}

const maxQueued = 256 << 10

var (
	writeBuffers = newBufferPool(1024)
	errTooSlow   = errors.New("the peer does not read: connection closed")
)

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.queue == nil {
		w.queue = writeBuffers.get()
	}
	if len(*w.queue)+len(p) > maxQueued {
		w.err = errTooSlow
		go w.fail()
		return 0, w.err
	}
	*w.queue = append(*w.queue, p...)
	if !w.flushing {
		w.flushing = true
		go w.flush()
	}
	return len(p), nil
}

// flush writes what is queued, in one call each time, until the queue is
// empty.
func (w *writer) flush() {
	for {
		w.mu.Lock()
		b := w.queue
		w.queue = nil
		if b == nil || w.err != nil {
			w.flushing = false
			if w.idle != nil {
				w.idle.Broadcast()
			}
			w.mu.Unlock()
			if b != nil {
				writeBuffers.put(b)
			}
			return
		}
		w.mu.Unlock()
		_, err := w.conn.Write(*b)
		writeBuffers.put(b)
		if err != nil {
			w.mu.Lock()
			first := w.err == nil
			if first {
				w.err = err
			}
			w.mu.Unlock()
			if first {
				w.fail()
			}
		}
	}
}

// fail closes the connection and tells the owner, once: only whoever
// stored the first error calls it.
func (w *writer) fail() {
	w.conn.Close()
	w.mu.Lock()
	f := w.onError
	w.mu.Unlock()
	if f != nil {
		f()
	}
}

// failed sets what a write error ends (the session, once it exists).
func (w *writer) failed(f func()) {
	w.mu.Lock()
	w.onError = f
	w.mu.Unlock()
}

// Close sends what is queued first — a closing frame (a takeover, a
// shutdown) must not be lost, nor what came before it — giving a peer
// that does not read one second, then closes.
func (w *writer) Close() error {
	w.conn.SetWriteDeadline(time.Now().Add(time.Second))
	w.mu.Lock()
	if w.flushing && w.idle == nil {
		w.idle = sync.NewCond(&w.mu)
	}
	for w.flushing {
		w.idle.Wait()
	}
	w.mu.Unlock()
	return w.conn.Close()
}

// The rest of net.Conn is the connection's own.
func (w *writer) Read(p []byte) (int, error)         { return w.conn.Read(p) }
func (w *writer) LocalAddr() net.Addr                { return w.conn.LocalAddr() }
func (w *writer) RemoteAddr() net.Addr               { return w.conn.RemoteAddr() }
func (w *writer) SetDeadline(t time.Time) error      { return w.conn.SetDeadline(t) }
func (w *writer) SetReadDeadline(t time.Time) error  { return w.conn.SetReadDeadline(t) }
func (w *writer) SetWriteDeadline(t time.Time) error { return w.conn.SetWriteDeadline(t) }
