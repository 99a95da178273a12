package session

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"

	"keno/engine"
	"keno/protocol"
	"keno/server/auth"
	"keno/server/ratelimit"
	"keno/server/wallet"
)

// hello authenticates the connection (the token, its revocation, the
// operator's block), takes the player's ownership lease, answers with the
// welcome and resumes the games left open.
func (s *Session) hello(ctx context.Context, req *protocol.Request) error {
	if s.player != "" {
		return protocol.Errf(protocol.CodeBadRequest, "already authenticated")
	}
	claims, err := s.hub.signer.VerifyClaims(req.Token, time.Now())
	if err == nil && claims.Session != "" {
		if revoked, rerr := s.hub.store.Revoked(ctx, claims.Session); rerr != nil {
			return rerr
		} else if revoked {
			err = auth.ErrRevoked
		}
	}
	if err != nil {
		s.hub.metrics.Connects.WithLabelValues("unauthorized").Inc()
		if errors.Is(err, auth.ErrExpired) {
			return protocol.Errf(protocol.CodeUnauthorized, "your session token has expired: log in again")
		}
		return protocol.Errf(protocol.CodeUnauthorized, "invalid token: %v", err)
	}
	if cur := s.hub.cfg.Currency; claims.Currency != "" && cur != "" && claims.Currency != cur {
		s.hub.metrics.Connects.WithLabelValues("unauthorized").Inc()
		return protocol.Errf(protocol.CodeUnauthorized, "this token is for an account in %s; this game plays in %s", claims.Currency, cur)
	}
	player := claims.Player
	s.sid = claims.Session
	if !wallet.ValidPlayer(player) {
		return protocol.Errf(protocol.CodeUnauthorized, "invalid player id in token")
	}
	s.version = negotiate(req.Versions)
	if s.version == 0 {
		s.fail(req.ID, protocol.Errf(protocol.CodeUnsupported, "this server speaks protocol versions %v", protocol.Versions))
		s.conn.Close(websocket.StatusPolicyViolation, "unsupported protocol version")
		return nil
	}
	if blocked, err := s.hub.store.Blocked(ctx, player); err != nil {
		return err
	} else if blocked {
		s.hub.metrics.Connects.WithLabelValues("blocked").Inc()
		s.fail(req.ID, protocol.Errf(protocol.CodeBlocked, "this account is blocked by the operator: contact customer service"))
		s.conn.Close(websocket.StatusCode(4003), "account blocked")
		return nil
	}
	if ok, retry, err := s.hub.limiter.Allow(ctx, ratelimit.ConnectPlayer(player), s.hub.limiter.Rules.ConnectsPerPID); err == nil && !ok {
		s.hub.metrics.Connects.WithLabelValues("rate_limited").Inc()
		e := protocol.Errf(protocol.CodeRateLimited, "too many connections for this player: wait a moment")
		e.RetryMS = retry.Milliseconds()
		return e
	}
	var fence string
	if err := retryTransient(ctx, func() (err error) {
		fence, err = s.hub.store.Claim(ctx, player, s.hub.cfg.LeaseTTL)
		return err
	}); err != nil {
		return err
	}
	s.player = player
	s.setFence(fence)
	if !s.hub.register(s) {
		return nil // a newer connection of the player won the race: this one is closing
	}
	s.hub.metrics.Connects.WithLabelValues("ok").Inc()

	// Three independent reads at once. The open games are looked up before
	// the welcome, which lists them: a client that comes back knows at once
	// which games it will see again, and that any other it awaited was
	// settled meanwhile.
	var (
		wg                         sync.WaitGroup
		acct                       wallet.Account
		remote                     int64
		remoteOK                   bool
		lim                        wallet.Limits
		fair                       wallet.FairState
		open                       []*wallet.GameState
		standErr, fairErr, openErr error
	)
	s.hub.warm.Join(&wg, func() { acct, lim, standErr = s.hub.store.Standing(ctx, player) })
	s.hub.warm.Join(&wg, func() { fair, fairErr = s.loadFair(ctx) })
	s.hub.warm.Join(&wg, func() { remote, remoteOK = s.hub.bank.Balance(ctx, player) })
	s.hub.warm.Join(&wg, func() { open, openErr = s.hub.store.OpenGames(ctx, player) })
	wg.Wait()
	if err := errors.Join(standErr, fairErr, openErr); err != nil {
		return err
	}
	var refs []protocol.GameRef
	for _, g := range open {
		refs = append(refs, protocol.GameRef{Game: g.ID, Index: g.Index, Nonce: g.Fair.Nonce, Commit: g.Fair.Commit})
	}
	balance := acct.Shown()
	if remoteOK {
		balance = remote
	}
	cfg := s.hub.cfg
	t := s.hub.table
	var now int64
	if protocol.Ahead(s.version) {
		now = time.Now().UnixMilli()
	}
	s.reply(req.ID, &protocol.Message{Type: protocol.TWelcome, Version: s.version, Now: now, Player: player,
		Balance: &balance, Limits: limitsInfo(lim),
		Fair: &protocol.FairInfo{Commit: fair.Commit, ClientSeed: fair.ClientSeed, NextNonce: fair.NextNonce},
		Config: &protocol.GameConfig{Stakes: t.Stakes, DefaultStake: t.DefaultStake, MinPicks: engine.MinPicks,
			MaxPicks: engine.MaxPicks, Grid: engine.GridSize, MaxGrids: protocol.MaxGrids, TicketMax: s.hub.store.Config().TicketMax,
			ColorMS: cfg.ColorInterval.Milliseconds(), NumberMS: cfg.NumberInterval.Milliseconds(), HoldMS: cfg.ResultHold.Milliseconds(), DevMode: cfg.DevMode,
			NotDurable: cfg.NotDurable, LimitRaiseMS: s.hub.store.Config().RaiseDelay.Milliseconds()},
		Games: refs})
	if len(open) == 0 {
		return nil
	}
	s.hub.metrics.Resumed.Add(float64(len(open)))
	s.play(open, true, func() { s.send(&protocol.Message{Type: protocol.TResume, Games: refs}) })
	return nil
}

// negotiate picks the newest protocol version both sides speak (0: none).
func negotiate(offered []int) int {
	if len(offered) == 0 {
		return protocol.Version
	}
	for _, v := range protocol.Versions {
		for _, o := range offered {
			if o == v {
				return v
			}
		}
	}
	return 0
}

// ping answers heartbeats (which keep the connection from being reaped).
func (s *Session) ping(id string) {
	s.reply(id, &protocol.Message{Type: protocol.TPong})
}
