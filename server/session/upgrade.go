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

// smallBuffers hands the WebSocket library small read and write buffers
// instead of net/http's 4 KiB each: an idle player's memory is mostly
// buffers, held for the connection's life. Frames here are a few hundred
// bytes. Bytes the client sent right after the upgrade request are
// carried over. Writes go through the connection's writer, which queues
// them in a lent buffer and batches messages due together: the library's
// own write buffer only gathers a frame's header with its payload, and a
// frame larger than it reaches the writer in two parts instead of one.
type smallBuffers struct {
	http.ResponseWriter
	w *writer
}

// Buffer sizes: a client's frames are small (a ticket, a choice), a
// reveal frame is about 150 bytes.
const (
	readBuffer  = 512
	writeBuffer = 256
)

func (w *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	var src io.Reader = conn
	pending, _ := brw.Reader.Peek(brw.Reader.Buffered())
	if len(pending) > 0 {
		src = io.MultiReader(bytes.NewReader(bytes.Clone(pending)), conn)
	}
	r := bufio.NewReaderSize(src, max(readBuffer, len(pending)))
	if _, err := r.Peek(len(pending)); err != nil {
		return nil, nil, err
	}
	w.w = &writer{conn: conn}
	return w.w, bufio.NewReadWriter(r, bufio.NewWriterSize(w.w, writeBuffer)), nil
}

func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
