package session

import (
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// writeLog passes writes to a real connection and remembers each call;
// the first call waits for release, like a socket whose buffer is full.
type writeLog struct {
	net.Conn
	release chan struct{}
	mu      sync.Mutex
	calls   []string
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	first := len(w.calls) == 0
	w.calls = append(w.calls, string(p))
	w.mu.Unlock()
	if first {
		<-w.release
	}
	return w.Conn.Write(p)
}

func (w *writeLog) written() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.calls)
}

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() { c, _ := l.Accept(); accepted <- c }()
	client, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

// What is queued while the flusher writes leaves in its next single
// write, in order; Close sends everything queued before closing.
func TestWriterDrainsItsQueueBeforeWriting(t *testing.T) {
	server, client := tcpPair(t)
	log := &writeLog{Conn: server, release: make(chan struct{})}
	w := &writer{conn: log}

	w.Write([]byte("a")) // the flusher takes it and blocks in the socket
	for len(log.written()) == 0 {
		time.Sleep(time.Millisecond)
	}
	for _, p := range []string{"b", "c", "d"} {
		if n, err := w.Write([]byte(p)); n != 1 || err != nil {
			t.Fatalf("a queued write answered %d, %v", n, err)
		}
	}
	close(log.release)
	w.Write([]byte("e"))
	w.Close()
	got, _ := io.ReadAll(client)
	if string(got) != "abcde" {
		t.Fatalf("the peer read %q, want abcde", got)
	}
	calls := log.written()
	if len(calls) > 3 || calls[0] != "a" || calls[1][:3] != "bcd" {
		t.Fatalf("writes %q: b, c and d must leave together, after a", calls)
	}
}

// A peer that never reads gets the connection closed once too much is
// queued; the writer's owner is told, and later writes fail at once.
func TestWriterClosesOnASlowPeer(t *testing.T) {
	server, _ := tcpPair(t)
	ended := make(chan struct{})
	w := &writer{conn: server}
	w.failed(func() { close(ended) })
	chunk := make([]byte, 64<<10)
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = w.Write(chunk)
	}
	if err == nil {
		t.Fatal("64 MiB queued for a peer that never reads")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the owner was not told")
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("a write after the failure succeeded")
	}
}
