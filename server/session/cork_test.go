package session

import (
	"io"
	"net"
	"slices"
	"sync"
	"testing"
)

// writeLog passes writes to a real connection and remembers each call.
type writeLog struct {
	net.Conn
	mu    sync.Mutex
	calls []string
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.calls = append(w.calls, string(p))
	w.mu.Unlock()
	return w.Conn.Write(p)
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

func TestCorkSendsABurstInOneWrite(t *testing.T) {
	server, client := tcpPair(t)
	log := &writeLog{Conn: server}
	c := &corkConn{Conn: log}

	c.Write([]byte("a")) // not corked: straight through
	c.cork()
	c.Write([]byte("b"))
	c.Write([]byte("c"))
	if len(log.calls) != 1 {
		t.Fatalf("corked writes reached the connection: %q", log.calls)
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("d"))
	if want := []string{"a", "bc", "d"}; !slices.Equal(log.calls, want) {
		t.Fatalf("writes %q, want %q", log.calls, want)
	}
	// Closing while corked sends what is held first.
	c.cork()
	c.Write([]byte("e"))
	c.Close()
	got, _ := io.ReadAll(client)
	if string(got) != "abcde" {
		t.Fatalf("the peer read %q, want abcde", got)
	}
}
