package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"keno/engine"
)

// Client is a Go client of the protocol. Replies are matched to requests by
// id; everything the server pushes (the reveal, offers, settlements) comes
// out of Next in order.
type Client struct {
	conn    *websocket.Conn
	nextID  atomic.Int64
	sentAt  atomic.Int64 // UnixNano of the last frame sent
	mu      sync.Mutex
	pending map[string]chan *Message
	events  chan *Message
	done    chan struct{}
	err     error
	Welcome *Message

	// OnTimed, if set, is called with each timed message and its receipt
	// time (for lateness measurements).
	OnTimed func(m *Message, received time.Time)
}

// ErrClosed is returned once the connection has ended.
var ErrClosed = errors.New("protocol: connection closed")

// Dial connects to a server's /ws URL without authenticating.
func Dial(ctx context.Context, url string) (*Client, error) {
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(1 << 20)
	c := &Client{conn: conn, pending: map[string]chan *Message{}, events: make(chan *Message, 256), done: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

// Connect dials and says hello with token, in protocol version 1 (the
// server sends each timed message at its t); it returns after the welcome.
func Connect(ctx context.Context, url, token string) (*Client, error) {
	return ConnectVersion(ctx, url, token, 1)
}

// ConnectVersion is Connect in protocol version v. In version 2 a game's
// timed messages come out of Next ahead of their t: the caller shows each
// at its t (Welcome.Now gives the server's clock).
func ConnectVersion(ctx context.Context, url, token string, v int) (*Client, error) {
	c, err := Dial(ctx, url)
	if err != nil {
		return nil, err
	}
	w, err := c.Request(ctx, &Request{Type: THello, Token: token, Versions: []int{v}})
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Welcome = w
	return c, nil
}

// messages recycles the pushed messages their reader is done with
// (Release). A load test reads millions, in a process that collects no
// garbage during a run (loadtest): each new one would be fresh memory,
// faulted in and cleared, which cost it an eighth of its CPU.
var messages = sync.Pool{New: func() any { return new(Message) }}

// Release hands back a message Next returned, once the caller is done
// with it: it is reused for a later one, so neither the caller nor
// anything it handed m to may touch m afterwards (what m's fields point
// to stays the caller's). Releasing is optional.
func (c *Client) Release(m *Message) { messages.Put(m) }

func (c *Client) readLoop() {
	defer close(c.done)
	defer close(c.events)
	var buf bytes.Buffer // reused: decoding copies what it keeps
	for {
		buf.Reset()
		_, r, err := c.conn.Reader(context.Background())
		if err == nil {
			_, err = buf.ReadFrom(r)
		}
		if err != nil {
			c.mu.Lock()
			c.err = err
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		now := time.Now()
		m := messages.Get().(*Message)
		if err := DecodeMessage(buf.Bytes(), m); err != nil {
			messages.Put(m)
			continue
		}
		if m.T != 0 && c.OnTimed != nil {
			c.OnTimed(m, now)
		}
		if m.ID != "" {
			c.mu.Lock()
			ch := c.pending[m.ID]
			delete(c.pending, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
				continue
			}
		}
		c.events <- m
	}
}

// Send writes a request without waiting for its reply; it fills in the id.
func (c *Client) Send(ctx context.Context, r *Request) (chan *Message, error) {
	if r.ID == "" {
		r.ID = strconv.FormatInt(c.nextID.Add(1), 10)
	}
	ch := make(chan *Message, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.pending[r.ID] = ch
	c.mu.Unlock()
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if err := c.write(ctx, b); err != nil {
		return nil, err
	}
	return ch, nil
}

func (c *Client) write(ctx context.Context, b []byte) error {
	c.sentAt.Store(time.Now().UnixNano())
	return c.conn.Write(ctx, websocket.MessageText, b)
}

// Request sends r and waits for its reply; an error reply comes back as a
// *Error.
func (c *Client) Request(ctx context.Context, r *Request) (*Message, error) {
	ch, err := c.Send(ctx, r)
	if err != nil {
		return nil, err
	}
	return c.await(ctx, ch)
}

func (c *Client) await(ctx context.Context, ch chan *Message) (*Message, error) {
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, ErrClosed
		}
		if m.Type == TError && m.Error != nil {
			return m, m.Error
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SendRaw writes any bytes as a text frame (for tests of bad input).
func (c *Client) SendRaw(ctx context.Context, b []byte) error {
	return c.write(ctx, b)
}

// Next returns the next pushed message.
func (c *Client) Next(ctx context.Context) (*Message, error) {
	select {
	case m, ok := <-c.events:
		if !ok {
			return nil, ErrClosed
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// NextOf skips pushed messages until one of type t (returned) arrives.
func (c *Client) NextOf(ctx context.Context, t string) (*Message, error) {
	for {
		m, err := c.Next(ctx)
		if err != nil {
			return nil, err
		}
		if m.Type == t {
			return m, nil
		}
	}
}

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close ends the connection.
func (c *Client) Close() error { return c.conn.Close(websocket.StatusNormalClosure, "") }

// CloseNow drops the connection without a close handshake (a lost network).
func (c *Client) CloseNow() error { return c.conn.CloseNow() }

// Strategy answers the offers of a game.
type Strategy struct {
	Continue func(m *engine.Main) bool // Stop-or-Continue; nil: always stop
	Box      func() int                // Extra; nil: first box
}

// GameLog is what a client saw of one game.
type GameLog struct {
	Game      string
	Colors    []string
	Numbers   []int
	Main      *engine.Main
	SoC       []int
	Continued bool
	Box       int
	Boxes     []int64
	Settled   *Message
}

// TicketLog is what a client saw of a ticket.
type TicketLog struct {
	Ticket   string
	Accepted *Message
	Games    []*GameLog
	Done     *Message
}

// Play builds a ticket, confirms it and plays it to the end with strategy.
func (c *Client) Play(ctx context.Context, grids []Grid, s Strategy) (*TicketLog, error) {
	sum, err := c.Request(ctx, &Request{Type: TTicket, Grids: grids})
	if err != nil {
		return nil, err
	}
	acc, err := c.Request(ctx, &Request{Type: TConfirm, Ticket: sum.Ticket})
	if err != nil {
		return nil, err
	}
	log, err := c.Follow(ctx, s)
	if log != nil {
		log.Accepted = acc
	}
	return log, err
}

// Follow consumes pushed messages until a ticket_done, answering offers.
func (c *Client) Follow(ctx context.Context, s Strategy) (*TicketLog, error) {
	t := &TicketLog{}
	var g *GameLog
	for {
		m, err := c.Next(ctx)
		if err != nil {
			return t, err
		}
		switch m.Type {
		case TGameStart:
			g = &GameLog{Game: m.Game, Box: -1}
			t.Games = append(t.Games, g)
			t.Ticket = m.Ticket
		case TColor:
			g.Colors = append(g.Colors, m.Color)
		case TNumber:
			g.Numbers = append(g.Numbers, m.Number)
		case TMainResult:
			g.Main = m.Main
			g.Continued = false
		case TSoCOffer:
			cont := s.Continue != nil && s.Continue(g.Main)
			g.Continued = cont
			if _, err := c.Request(ctx, &Request{Type: TChoice, Game: m.Game, Continue: &cont}); err != nil {
				return t, fmt.Errorf("choice: %w", err)
			}
		case TSoCDraw:
			g.SoC = append(g.SoC, m.Number)
			g.Continued = true
		case TExtraOffer:
			box := 0
			if s.Box != nil {
				box = s.Box()
			}
			if _, err := c.Request(ctx, &Request{Type: TBox, Game: m.Game, Box: &box}); err != nil {
				return t, fmt.Errorf("box: %w", err)
			}
		case TExtraResult:
			g.Box, g.Boxes = *m.Box, m.Boxes
		case TSettled:
			g.Settled = m
		case TTicketDone:
			t.Done = m
			return t, nil
		case TError:
			return t, m.Error
		case TTakenOver, TShutdown:
			return t, Errf(CodeTakenOver, "%s", m.Text)
		}
	}
}

// Heartbeat pings the server until the connection ends, so an idle client
// is not reaped (servers drop silent connections): every interval in which
// it has sent nothing for half an interval. Any frame proves the
// connection alive, so a playing client rarely pings.
func (c *Client) Heartbeat(every time.Duration) {
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-c.done:
				return
			case <-t.C:
				if time.Since(time.Unix(0, c.sentAt.Load())) < every/2 {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), every)
				c.Send(ctx, &Request{Type: TPing})
				cancel()
			}
		}
	}()
}
