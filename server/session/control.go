package session

import (
	"context"
	"encoding/json"
	"time"

	"github.com/coder/websocket"

	"keno/protocol"
	"keno/server/wallet"
)

// Live operations, cluster-wide: maintenance (no new ticket anywhere;
// games in play finish), a message to every connected player, and
// ending a player's sessions (kick, block, exclusion). The state lives in
// Redis (wallet.SetMaintenance); changes are published on the control
// channel so every server applies them at once, and each server also
// re-reads the state every few seconds, so a missed message or a restart
// cannot leave it behind.

// control is one published order.
type control struct {
	Kind   string `json:"kind"` // maintenance, broadcast, kick
	Text   string `json:"text,omitempty"`
	Player string `json:"player,omitempty"` // kick
	SID    string `json:"sid,omitempty"`    // revoke
	Reason string `json:"reason,omitempty"` // kick: kicked, blocked, excluded
}

// SetMaintenance starts (text != "") or ends maintenance cluster-wide.
func (h *Hub) SetMaintenance(ctx context.Context, text string) error {
	if err := h.store.SetMaintenance(ctx, text); err != nil {
		return err
	}
	c := control{Kind: "maintenance", Text: text}
	h.apply(c) // here at once; the others when the order reaches them
	return h.publish(ctx, c)
}

// Maintenance is the message of the maintenance in force ("" if none).
func (h *Hub) Maintenance() string {
	if p := h.maintenance.Load(); p != nil {
		return *p
	}
	return ""
}

// Broadcast shows text to every connected player, on every server.
func (h *Hub) Broadcast(ctx context.Context, text string) error {
	return h.publish(ctx, control{Kind: "broadcast", Text: text})
}

// Revoke ends the session sid everywhere and refuses its token from now on
// (until it would have expired anyway: until).
func (h *Hub) Revoke(ctx context.Context, sid string, until time.Time) error {
	if err := h.store.Revoke(ctx, sid, until); err != nil {
		return err
	}
	return h.publish(ctx, control{Kind: "revoke", SID: sid})
}

// Kick ends player's sessions on every server, saying why (kicked,
// blocked, excluded). Games in play stay safe: they resume or settle.
func (h *Hub) Kick(ctx context.Context, player, reason string) error {
	return h.publish(ctx, control{Kind: "kick", Player: player, Reason: reason})
}

func (h *Hub) publish(ctx context.Context, c control) error {
	b, _ := json.Marshal(c)
	return h.store.Publish(ctx, wallet.ControlChannel, b)
}

// watchControls applies the published orders until ctx ends.
func (h *Hub) watchControls(ctx context.Context) {
	ch := h.store.Subscribe(ctx, wallet.ControlChannel, 256)
	refresh := time.NewTicker(3 * time.Second)
	defer refresh.Stop()
	h.readMaintenance(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			h.readMaintenance(ctx)
		case m, ok := <-ch:
			if !ok {
				return
			}
			var c control
			if json.Unmarshal([]byte(m.Payload), &c) != nil {
				continue
			}
			h.apply(c)
		}
	}
}

func (h *Hub) readMaintenance(ctx context.Context) {
	v, err := h.store.Maintenance(ctx)
	switch {
	case err != nil: // keep what was known
	case v == "":
		h.maintenance.Store(nil)
	default:
		h.maintenance.Store(&v)
	}
}

func (h *Hub) apply(c control) {
	switch c.Kind {
	case "maintenance":
		if c.Text == "" {
			h.maintenance.Store(nil)
		} else {
			text := c.Text
			h.maintenance.Store(&text)
		}
	case "broadcast":
		for _, s := range h.reg.players(nil) {
			s.send(&protocol.Message{Type: protocol.TNotice, Text: c.Text})
		}
	case "revoke":
		for _, s := range h.reg.players(func(s *Session) bool { return s.sid == c.SID }) {
			s.end(protocol.Fail("", protocol.Errf(protocol.CodeKicked, "The operator revoked this session: log in again.")), websocket.StatusCode(4003), "session revoked")
		}
	case "kick":
		if s := h.reg.session(c.Player); s != nil {
			text := map[string]string{
				"blocked":  "Your account is blocked by the operator: contact customer service.",
				"excluded": "You are excluded from play at your request or the operator's.",
			}[c.Reason]
			if text == "" {
				text = "The operator ended this session."
			}
			s.end(protocol.Fail("", protocol.Errf(protocol.CodeKicked, "%s", text)), websocket.StatusCode(4003), "ended by the operator")
		}
	}
}

// Connected reports whether player has a session on this server.
func (h *Hub) Connected(player string) bool {
	return h.reg.session(player) != nil
}

// errMaintenance refuses a new ticket during maintenance.
func (h *Hub) errMaintenance() error {
	if text := h.Maintenance(); text != "" {
		return protocol.Errf(protocol.CodeMaintenance, "%s", text)
	}
	return nil
}
