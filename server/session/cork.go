package session

import (
	"net"
	"sync"
	"time"
)

// corkConn lets a session send the frames that fall due together in one
// write. On loopback and on busy servers the write system call is most of
// what a small message costs, and a game has bursts: its start and first
// colour, a result and the offer after it, the last draw and its outcome,
// the settlement and the ticket's end, a whole resumed game at once.
//
// While corked, what the WebSocket library flushes is kept in order; uncork
// writes it in one call. The game goroutine corks while it runs and uncorks
// before anything that makes it wait (a timer, a player's choice, Redis),
// so nothing waits in the buffer longer than the code between two waits.
type corkConn struct {
	net.Conn
	mu      sync.Mutex
	corked  bool
	pending *[]byte // from corkBuffers while corked and not empty
}

var corkBuffers = newBufferPool(1024)

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.corked {
		if c.pending == nil {
			c.pending = corkBuffers.get()
		}
		*c.pending = append(*c.pending, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	c.mu.Unlock()
	// Not under mu: a write blocked on a client that does not read must
	// not keep Close from ending it.
	return c.Conn.Write(p)
}

// cork starts holding writes.
func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork writes what was held, in one call, and stops holding.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.flushLocked()
}

func (c *corkConn) flushLocked() error {
	if c.pending == nil {
		return nil
	}
	b := c.pending
	c.pending = nil
	_, err := c.Conn.Write(*b)
	corkBuffers.put(b)
	return err
}

// Close sends what is held first: a closing frame written while corked
// (a takeover, a shutdown) must not be lost, nor what came before it. If
// an uncork is writing right now (perhaps blocked on a client that does
// not read), closing is what ends it.
func (c *corkConn) Close() error {
	if c.mu.TryLock() {
		c.corked = false
		c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
		c.flushLocked()
		c.mu.Unlock()
	}
	return c.Conn.Close()
}
