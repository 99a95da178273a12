package session

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"

	"keno/protocol"
	"keno/server/ratelimit"
)

// ServeHTTP upgrades /ws requests to a session.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.reg.isClosing() {
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return
	}
	ip := h.cfg.ClientIP.Of(r)
	if ok, retry, err := h.limiter.Allow(r.Context(), ratelimit.ConnectIP(ip), h.limiter.Rules.ConnectsPerIP); err == nil && !ok {
		h.metrics.Connects.WithLabelValues("rate_limited").Inc()
		w.Header().Set("Retry-After", retryAfter(retry))
		http.Error(w, "too many connection attempts", http.StatusTooManyRequests)
		return
	}
	sb := &smallBuffers{ResponseWriter: w}
	conn, err := websocket.Accept(sb, r, &websocket.AcceptOptions{
		CompressionMode: websocket.CompressionDisabled, // small frames; compression costs memory per connection
		OriginPatterns:  h.cfg.OriginPatterns,          // other origins get 403
	})
	if err != nil {
		return
	}
	conn.SetReadLimit(protocol.MaxFrame)
	// The session runs in a goroutine of its own and this handler returns:
	// net/http's connection goroutine, its deep stack and the upgrade
	// request are then freed, which keeps an idle player's footprint small.
	s := newSession(h, conn, sb.w, ip)
	if !h.reg.open(s, s.run) { // shutdown began during the upgrade
		conn.Close(websocket.StatusGoingAway, "server shutting down")
		s.cancel()
	}
}

// smallBuffers hands the WebSocket library smaller read and write buffers
// than net/http's 4 KiB each: frames here are a few hundred bytes, and an
// idle player's memory is mostly buffers. Bytes the client sent right
// after the upgrade request are carried over. Writes go through the
// connection's writer, which batches messages due together.
type smallBuffers struct {
	http.ResponseWriter
	w *writer
}

// Buffer sizes: frames here are a few hundred bytes.
const (
	readBuffer  = 1 << 10
	writeBuffer = 2 << 10
)

func (w *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	pending, _ := brw.Reader.Peek(brw.Reader.Buffered())
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(pending)), conn), max(readBuffer, len(pending)))
	if _, err := r.Peek(len(pending)); err != nil {
		return nil, nil, err
	}
	w.w = &writer{conn: conn}
	return w.w, bufio.NewReadWriter(r, bufio.NewWriterSize(w.w, writeBuffer)), nil
}

func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
