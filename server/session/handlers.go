package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"keno/engine"
	"keno/protocol"
	"keno/server/metrics"
	"keno/server/operator"
	"keno/server/wallet"
)

// Quick picks use a pooled secure generator (one per goroutine at a time).
var sources = sync.Pool{New: func() any { return engine.NewSecureSource() }}

// errDraining refuses a new ticket while the server shuts down.
var errDraining = protocol.Errf(protocol.CodeDraining, "This server is restarting: reconnect (to another server) to play; your games in play are safe.")

func (s *Session) ticket(ctx context.Context, req *protocol.Request) error {
	if s.hub.Draining() {
		return errDraining
	}
	if err := s.hub.errMaintenance(); err != nil {
		return err
	}
	if !s.hub.admit.open(len(req.Grids)) {
		return s.busy()
	}
	grids := make([]gridSpec, len(req.Grids))
	for i, g := range req.Grids {
		if !s.hub.table.ValidStake(g.Stake) {
			return protocol.Errf(protocol.CodeInvalidStake, "grid %d: stake must be one of %v cents", i+1, s.hub.table.Stakes)
		}
		picks := g.Picks
		if g.QuickPick != 0 {
			src := sources.Get().(*engine.SecureSource)
			q, err := engine.QuickPick(src, g.QuickPick)
			sources.Put(src)
			if err != nil {
				return protocol.Errf(protocol.CodeInvalidPicks, "grid %d: quick pick %v", i+1, err)
			}
			picks = q
		}
		p, err := engine.ValidatePicks(picks)
		if err != nil {
			return protocol.Errf(protocol.CodeInvalidPicks, "grid %d: %v", i+1, err)
		}
		grids[i] = gridSpec{picks: p, stake: g.Stake, quick: g.QuickPick != 0}
	}
	return s.summarise(ctx, req.ID, grids)
}

// summarise stores the ticket for confirmation and shows it with warnings.
//
// It also has the bank prepare what the bet needs before it and what
// does not depend on the player's decision, so that confirming is one
// round trip (seamless: the games' recovery entries and the debit's
// intent, before the debit; the Redis wallet's bet writes its entries
// itself). The provably fair nonces are taken by the bet itself.
func (s *Session) summarise(ctx context.Context, id string, grids []gridSpec) error {
	var total int64
	out := make([]protocol.GridSummary, len(grids))
	for i, g := range grids {
		total += g.stake
		out[i] = protocol.GridSummary{Picks: g.picks, Stake: g.stake, Quick: g.quick}
	}
	t := &pendingTicket{id: newID(), grids: grids, ids: make([]string, len(grids))}
	for i := range t.ids {
		t.ids[i] = gameID(t.id, i)
	}
	var (
		wg                sync.WaitGroup
		st                wallet.StakeStanding
		standErr, prepErr error
	)
	// The payment prepared holds for the grace period, so that a player
	// who confirms within it is never told the intent lapsed.
	due := time.Now().Add(s.hub.cfg.Grace)
	s.hub.warm.Join(&wg, func() { st, standErr = s.hub.store.StakeStanding(ctx, s.player) })
	// On this goroutine, beside the read: nothing to hand over when the
	// bank has nothing to prepare (WALLET=redis).
	prepErr = retryTransient(ctx, func() error { return s.hub.bank.Prepare(ctx, s.player, t.id, t.ids, total, due) })
	if prepErr == nil {
		t.intended = due
	}
	wg.Wait()
	if err := errors.Join(standErr, prepErr); err != nil {
		s.abandon(t)
		return err
	}
	if st.ExcludedUntil > time.Now().UnixMilli() {
		// Self-excluded: no ticket at all, not a ticket with a warning.
		s.abandon(t)
		return &wallet.Error{Code: wallet.CodeLimit, Reason: "self_excluded", Limit: st.ExcludedUntil}
	}
	var warnings []string
	if total > st.Balance {
		warnings = append(warnings, fmt.Sprintf("insufficient_funds: the ticket costs %s and your balance is %s; deposit or remove grids", engine.Euros(total), engine.Euros(st.Balance)))
	}
	if tm := s.hub.store.Config().TicketMax; total > tm {
		warnings = append(warnings, fmt.Sprintf("ticket_max: a ticket may not exceed %s", engine.Euros(tm)))
	}
	if st.LossLimit >= 0 && st.LostToday+total > st.LossLimit {
		warnings = append(warnings, fmt.Sprintf("loss_limit: this ticket would pass your daily loss limit (%s left today)", engine.Euros(max(0, st.LossLimit-st.LostToday))))
	}
	s.mu.Lock()
	old := s.pending
	s.pending = t
	s.mu.Unlock()
	if old != nil {
		s.abandon(old)
	}
	s.reply(id, &protocol.Message{Type: protocol.TSummary, Ticket: t.id, Grids: out, Total: total, Balance: &st.Balance, Warnings: warnings})
	return nil
}

// gameID names the i-th game of a ticket.
func gameID(ticket string, i int) string { return ticket + "-" + strconv.Itoa(i) }

// loadFair reads the player's provably fair inputs (creating a seed if
// there is none) and keeps them for the next ticket.
func (s *Session) loadFair(ctx context.Context) (wallet.FairState, error) {
	var f wallet.FairInputs
	err := retryTransient(ctx, func() (err error) {
		t0 := time.Now()
		f, err = s.hub.store.Fair(ctx, s.player)
		s.hub.metrics.ObserveRedis("seeds", t0, err)
		return err
	})
	if err != nil {
		return wallet.FairState{}, err
	}
	s.fair = &f
	return f.Public(), nil
}

// abandon forgets a ticket that will not be confirmed — its prepared
// payment — unless a confirmation went unanswered, which may have landed.
func (s *Session) abandon(t *pendingTicket) {
	if t.unsure {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.hub.bank.Forget(ctx, s.player, t.id, t.ids); err != nil {
		s.log().Warn().Err(err).Msg("forget an unconfirmed ticket's payment (the sweep undoes it)")
	}
}

func (s *Session) confirm(ctx context.Context, req *protocol.Request) error {
	if s.hub.Draining() {
		return errDraining
	}
	if err := s.hub.errMaintenance(); err != nil {
		return err
	}
	start := time.Now()
	// The operator's wallet's time (seamless mode) is not all this
	// server's to answer for: admission control counts only a share.
	var operatorTime operator.Stopwatch
	ctx = operator.Timing(ctx, &operatorTime)
	s.mu.Lock()
	t, playing := s.pending, s.playing != nil
	s.mu.Unlock()
	if t == nil || t.id != req.Ticket {
		return protocol.Errf(protocol.CodeNoSuchTicket, "no ticket %q awaits confirmation: build a ticket first", req.Ticket)
	}
	if playing {
		return protocol.Errf(protocol.CodeNotYourTurn, "a ticket is still in play; confirm when it is over")
	}
	// Admitted before anything is written; released unless the games play.
	if !s.hub.admit.take(len(t.grids)) {
		return s.busy()
	}
	admitted := len(t.grids)
	defer func() { s.hub.admit.done(admitted) }()
	if s.fair == nil {
		if _, err := s.loadFair(ctx); err != nil {
			return err
		}
	}
	// One round trip: the bet script checks the provably fair inputs, the
	// bet rate and every limit. Retried with the same ticket id: a bet
	// that landed although its reply was lost answers "dup" the second
	// time, and is played. Inputs that moved (another session took nonces)
	// are dealt from again.
	var (
		tk      wallet.Ticket
		balance int64
		err     error
	)
	for attempt := 0; ; attempt++ {
		if tk, err = s.deal(t); err != nil {
			return err
		}
		err = retryTransient(ctx, func() (err error) {
			t0 := time.Now()
			balance, _, err = s.hub.bank.PlaceBet(ctx, s.player, s.fenceToken(), tk)
			s.hub.metrics.ObserveRedis("bet", t0, err)
			s.leaseExtended(t0, err)
			return err
		})
		var moved *wallet.FairMoved
		if !errors.As(err, &moved) || attempt == 3 {
			break
		}
		s.fair = &moved.Current
	}
	if err != nil {
		// A refused bet left nothing behind: the ticket awaits another
		// confirmation. An unanswered one may have landed, so its
		// recovery entries must stay. So must those of a ticket whose
		// operator debit was sent (ErrSpent): they are what finds its
		// rollback, or its intent, in the outbox should this server die
		// before the operator acknowledges it; the sweep drops them once
		// nothing is owed.
		if we := (*wallet.Error)(nil); !errors.As(err, &we) || errors.Is(err, wallet.ErrSpent) {
			t.unsure = true
		}
		if errors.Is(err, wallet.ErrSpent) {
			s.mu.Lock()
			if s.pending == t {
				s.pending = nil // its debit is spent: the player builds the ticket again
			}
			s.mu.Unlock()
		}
		return err
	}
	s.fair.Next += uint64(len(tk.Games))
	s.mu.Lock()
	s.pending = nil
	s.last = t.grids
	s.mu.Unlock()

	commit := tk.Games[0].Fair.Commit
	refs := make([]protocol.GameRef, len(tk.Games))
	states := make([]*wallet.GameState, len(tk.Games))
	for i, g := range tk.Games {
		refs[i] = protocol.GameRef{Game: g.ID, Index: i, Nonce: g.Fair.Nonce, Commit: commit}
		states[i] = &wallet.GameState{GameRecord: g, Status: "open"}
		s.hub.metrics.GamesStarted.WithLabelValues(metrics.Labels(len(g.Outcome.Picks), g.Outcome.Stake)...).Inc()
		s.hub.metrics.StakesCents.Add(float64(g.Outcome.Stake))
	}
	admitted = 0 // play counts them done, one by one
	s.busyStreak = 0
	s.refusals = 0 // as reply does, here on the reader: the game goroutine sends the reply (play)
	s.play(states, false, func() {
		s.send(&protocol.Message{Type: protocol.TAccepted, ID: req.ID, Ticket: t.id, Games: refs, Balance: &balance})
		took := time.Since(start)
		s.hub.metrics.ConfirmAccept.Observe(took.Seconds())
		s.hub.admit.accepted(took, operatorTime.Total())
	})
	return nil
}

// deal fixes every outcome of t now, from the player's committed inputs:
// nothing random later.
func (s *Session) deal(t *pendingTicket) (wallet.Ticket, error) {
	f := s.fair
	at := time.Now()
	now := at.UnixMilli()
	commit := engine.SeedCommitment(f.Seed)
	// The games' recovery entries fall due after the grace period.
	tk := wallet.Ticket{ID: t.id, Seed: f.Seed, Intended: t.intended, Due: at.Add(s.hub.cfg.Grace)}
	for i, g := range t.grids {
		nonce := f.Next + uint64(i)
		o, err := s.hub.table.Deal(engine.NewFairSource(f.Seed, f.Client, nonce), g.picks, g.stake)
		if err != nil {
			return tk, err
		}
		tk.Games = append(tk.Games, wallet.GameRecord{ID: t.ids[i], Ticket: t.id, Index: i, Grids: len(t.grids),
			Player: s.player, Created: now, Fair: wallet.Fairness{Commit: commit, ClientSeed: f.Client, Nonce: nonce}, Outcome: o})
	}
	return tk, nil
}

// replay builds a ticket identical to the last one, or to a game of the
// last 31 days, and shows its summary (confirm as usual).
func (s *Session) replay(ctx context.Context, req *protocol.Request) error {
	var grids []gridSpec
	if req.Last {
		s.mu.Lock()
		grids = s.last
		s.mu.Unlock()
		if grids == nil {
			hist, err := s.hub.store.History(ctx, s.player, 0, 1)
			if err != nil {
				return err
			}
			if len(hist) == 0 {
				return protocol.Errf(protocol.CodeNoSuchGame, "you have no bet to replay yet")
			}
			for i := 0; i < hist[0].Grids; i++ {
				g, err := s.hub.store.Game(ctx, s.player, gameID(hist[0].Ticket, i))
				if err != nil {
					return err
				}
				grids = append(grids, gridSpec{picks: g.Outcome.Picks, stake: g.Outcome.Stake})
			}
		}
	} else {
		g, err := s.hub.store.Game(ctx, s.player, req.Game)
		if errors.Is(err, wallet.ErrNoGame) || (err == nil && time.Since(time.UnixMilli(g.Created)) > s.hub.store.Config().History) {
			return protocol.Errf(protocol.CodeNoSuchGame, "no game %q in your last 31 days", req.Game)
		}
		if err != nil {
			return err
		}
		grids = []gridSpec{{picks: g.Outcome.Picks, stake: g.Outcome.Stake}}
	}
	for i := range grids {
		grids[i].quick = false // a replay plays the same numbers
	}
	return s.summarise(ctx, req.ID, grids)
}

func (s *Session) balance(ctx context.Context, id string) error {
	acct, lim, err := s.hub.store.Standing(ctx, s.player)
	if err != nil {
		return err
	}
	bal := acct.Shown()
	if b, ok := s.hub.bank.Balance(ctx, s.player); ok {
		bal = b
	}
	s.reply(id, &protocol.Message{Type: protocol.TBalanceInfo, Balance: &bal, Limits: limitsInfo(lim)})
	return nil
}

func (s *Session) limits(ctx context.Context) (*protocol.LimitsInfo, error) {
	l, err := s.hub.store.Limits(ctx, s.player)
	if err != nil {
		return nil, err
	}
	return limitsInfo(l), nil
}

func limitsInfo(l wallet.Limits) *protocol.LimitsInfo {
	li := protocol.LimitsInfo(l)
	return &li
}

func (s *Session) history(ctx context.Context, req *protocol.Request) error {
	games, err := s.hub.store.History(ctx, s.player, req.Before, req.Limit)
	if err != nil {
		return err
	}
	m := &protocol.Message{Type: protocol.THistoryList, History: []protocol.HistoryItem{}}
	for _, g := range games {
		m.History = append(m.History, historyItem(g))
		m.Next = g.Cursor
	}
	s.reply(req.ID, m)
	return nil
}

func historyItem(g *wallet.GameState) protocol.HistoryItem {
	return protocol.HistoryItem{Game: g.ID, Ticket: g.Ticket, Created: g.Created, Picks: g.Outcome.Picks,
		Stake: g.Outcome.Stake, Status: g.Status, Win: g.Win}
}

func (s *Session) game(ctx context.Context, req *protocol.Request) error {
	g, err := s.hub.store.Game(ctx, s.player, req.Game)
	if err != nil {
		return err
	}
	d := &protocol.GameDetail{HistoryItem: historyItem(g), Index: g.Index, Of: g.Grids,
		Fair:    protocol.FairRef{Commit: g.Fair.Commit, ClientSeed: g.Fair.ClientSeed, Nonce: g.Fair.Nonce},
		Outcome: g.Outcome, Continue: g.Continue, Box: g.Box, Result: g.Result}
	if g.Status != "settled" {
		// The outcome of a game in play stays hidden until it is revealed.
		d.Outcome = engine.Outcome{Picks: g.Outcome.Picks, Stake: g.Outcome.Stake}
	} else if d.Fair.ServerSeed, err = s.hub.store.RevealedSeed(ctx, s.player, g.Fair.Commit); err != nil {
		return err
	}
	s.reply(req.ID, &protocol.Message{Type: protocol.TGameDetail, Detail: d})
	return nil
}

func (s *Session) deposit(ctx context.Context, req *protocol.Request) error {
	if _, local := s.hub.bank.(redisBank); !s.hub.cfg.DevMode || !local {
		return protocol.Errf(protocol.CodeForbidden, "deposits go through the operator's cashier, not the game")
	}
	moved, err := s.hub.store.Deposit(ctx, s.player, "dep-"+req.Op, req.Amount)
	if err != nil {
		return err
	}
	bal := moved.Balance
	lim, err := s.limits(ctx)
	if err != nil {
		return err
	}
	s.reply(req.ID, &protocol.Message{Type: protocol.TBalanceInfo, Balance: &bal, Limits: lim})
	return nil
}

func (s *Session) setLimit(ctx context.Context, req *protocol.Request) error {
	if _, _, err := s.hub.store.SetLimit(ctx, s.player, req.Kind, req.Value); err != nil {
		return err
	}
	lim, err := s.limits(ctx)
	if err != nil {
		return err
	}
	s.reply(req.ID, &protocol.Message{Type: protocol.TLimits, Limits: lim})
	return nil
}

func (s *Session) clientSeed(ctx context.Context, req *protocol.Request) error {
	if strings.ContainsAny(req.Seed, ":") {
		return protocol.Errf(protocol.CodeBadRequest, "the client seed may not contain ':'")
	}
	if err := s.hub.store.SetClientSeed(ctx, s.player, req.Seed); err != nil {
		return err
	}
	f, err := s.loadFair(ctx)
	if err != nil {
		return err
	}
	s.reply(req.ID, &protocol.Message{Type: protocol.TFair, Fair: &protocol.FairInfo{Commit: f.Commit, ClientSeed: f.ClientSeed, NextNonce: f.NextNonce}})
	return nil
}

func (s *Session) rotateSeed(ctx context.Context, req *protocol.Request) error {
	// Revealing the seed would reveal what is still hidden in a game in play.
	if open, err := s.hub.store.OpenGames(ctx, s.player); err != nil {
		return err
	} else if len(open) > 0 {
		return protocol.Errf(protocol.CodeNotYourTurn, "finish the game in play before rotating the seed")
	}
	// (No bet can deal from the revealed seed: the bet script checks the
	// seed it names is the current one.)
	revealed, games, commit, err := s.hub.store.RotateSeed(ctx, s.player)
	if err != nil {
		return err
	}
	f, err := s.loadFair(ctx)
	if err != nil {
		return err
	}
	s.reply(req.ID, &protocol.Message{Type: protocol.TFair, Fair: &protocol.FairInfo{Commit: commit, ClientSeed: f.ClientSeed,
		NextNonce: f.NextNonce, Revealed: revealed, Games: games}})
	return nil
}
