package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"keno/engine"
	"keno/protocol"
	"keno/server/metrics"
	"keno/server/wallet"
)

// play streams the games of a ticket (or games being resumed) in a second
// goroutine, one after the other. Each settled game stays on screen for
// ResultHold before the next one starts, so a person sees every result.
// A resumed game keeps its original schedule: what was due before the
// player came back (what they had seen, or what ran while they were away)
// is sent at once, the rest at its pace; games not yet started start at
// theirs.
//
// A new ticket's games were admitted by confirm; resumed ones are counted
// in play here. Each counts done as it finishes, and whatever did not
// play when the goroutine ends (the session ended, Redis failed).
//
// announce tells the client which games it is about to see (accepted,
// resume); it runs once the games count as in play, so that a shutdown
// that follows the announcement lets them reach their pause. It runs on
// the game goroutine, just before the first game's start, so the writer
// usually finds both queued and sends them in one write (writer.go);
// announced from the caller's goroutine, it mostly left alone while the
// game goroutine woke (a write and a client wake-up a game). So announce
// must touch nothing the reader owns (Session's fields say whose is whose).
func (s *Session) play(games []*wallet.GameState, resumed bool, announce func()) {
	if resumed {
		s.hub.admit.force(len(games))
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.playing = done
	s.mu.Unlock()
	s.hub.warm.Go(func() {
		announce()
		left := len(games)
		defer func() {
			s.hub.admit.done(left)
			s.mu.Lock()
			s.playing, s.await = nil, nil
			s.mu.Unlock()
			close(done)
		}()
		var caughtUp time.Time // timed messages due by then go out at once
		if resumed {
			caughtUp = time.Now()
		}
		start := time.Now() // when the next game starts
		var wins []int64    // the ticket's games so far
		for i, g := range games {
			if i == 0 || g.Ticket != games[i-1].Ticket {
				wins = nil
				if resumed && g.Index == 0 {
					start = time.UnixMilli(g.Created)
				} else if resumed {
					// A ticket resumed part-way: its summary counts the
					// games settled before, while the player was away.
					earlier, last, err := s.settledWins(g.Ticket, g.Index)
					if err != nil {
						s.log().Error().Err(err).Str("ticket", g.Ticket).Msg("read a resumed ticket's earlier games")
						return // the game stays open; the player's next connection resumes it
					}
					wins, start = earlier, last.Add(s.hub.cfg.ResultHold)
				}
			}
			win, balance, ok := s.playGame(g, start, caughtUp)
			left--
			s.hub.admit.done(1)
			if !ok {
				return // the session ended or Redis failed: the game stays open for recovery
			}
			wins = append(wins, win)
			if g.Index == g.Grids-1 {
				var total int64
				for _, w := range wins {
					total += w
				}
				s.send(&protocol.Message{Type: protocol.TTicketDone, Ticket: g.Ticket, Win: total, Wins: wins, Balance: &balance})
			}
			start = time.Now().Add(s.hub.cfg.ResultHold)
		}
	})
}

// settledWins reads a ticket's first n games (all settled) in one round
// trip: their wins, and when the last of them was settled.
func (s *Session) settledWins(ticket string, n int) ([]int64, time.Time, error) {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = gameID(ticket, i)
	}
	games, err := s.hub.store.Games(ctx, s.player, ids)
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(games) != n {
		return nil, time.Time{}, fmt.Errorf("ticket %s: %d of its first %d games are stored", ticket, len(games), n)
	}
	wins := make([]int64, n)
	var last int64
	for i, g := range games {
		wins[i], last = g.Win, max(last, g.Settled)
	}
	return wins, time.UnixMilli(last), nil
}

// playGame reveals one game from start, collects the player's choices, settles it and
// returns the win and the new balance. ok is false if it could not finish.
func (s *Session) playGame(g *wallet.GameState, start, caughtUp time.Time) (win, balance int64, ok bool) {
	cfg := s.hub.cfg
	tab := s.hub.table
	o := &g.Outcome
	main := tab.Evaluate(o)
	p := &pacer{s: s, ahead: protocol.Ahead(s.version), start: start, caughtUp: caughtUp}
	// One message, refilled for each send: sending encodes it at once,
	// and a game has some twenty-five of them.
	m := new(protocol.Message)
	msg := func(v protocol.Message) *protocol.Message { *m = v; return m }
	defer func() {
		if p.timer != nil {
			p.timer.Stop()
		}
	}()

	if !p.at(0, msg(protocol.Message{Type: protocol.TGameStart, Game: g.ID, Ticket: g.Ticket, Index: g.Index, Of: g.Grids, Picks: o.Picks, Stake: o.Stake})) {
		return 0, 0, false
	}
	// Step 1: the ten colours; step 2: the numbers, up to a matched red.
	for i, c := range o.Colors {
		if !p.at(time.Duration(i)*cfg.ColorInterval, msg(protocol.Message{Type: protocol.TColor, Game: g.ID, Pos: i, Color: c.String()})) {
			return 0, 0, false
		}
	}
	step2 := engine.Drawn * cfg.ColorInterval
	for i := 0; i < main.Revealed; i++ {
		msg(protocol.Message{Type: protocol.TNumber, Game: g.ID, Pos: i, Number: int(o.Numbers[i]), Hit: main.Hits[i]})
		if main.Hits[i] && o.Colors[i] != engine.Blue {
			m.Effect = o.Colors[i].String()
		}
		if !p.at(step2+time.Duration(i)*cfg.NumberInterval, m) {
			return 0, 0, false
		}
	}
	choices := g.Choices()
	askSoC := main.SoC && g.Continue == nil
	var socCh chan decision
	if askSoC {
		socCh = s.expect(g.ID, "continue") // before the offer goes out: the answer may be quick
	}
	if !p.at(step2+time.Duration(main.Revealed)*cfg.NumberInterval, msg(protocol.Message{Type: protocol.TMainResult, Game: g.ID, Main: &main})) {
		return 0, 0, false
	}
	if askSoC && !s.send(msg(protocol.Message{Type: protocol.TSoCOffer, Game: g.ID, Gain: main.Gain})) {
		return 0, 0, false
	}
	// The game's last choice, one after which nothing more is shown (a
	// stop with no Extra to follow, an Extra box), is recorded with the
	// settlement: one Redis script instead of two. A choice that something
	// is shown after (the draw of a continue, the Extra offer after a
	// stop) is recorded first: what a player has seen after a choice
	// never lets them choose again.
	var last *wallet.Choice
	lastID := "" // its request's id, acknowledged once it is recorded
	if main.SoC {
		s.hub.metrics.SoCOffered.Inc()
		if askSoC {
			d, ok := s.decide(socCh, p.aheadBy())
			if !ok {
				return 0, 0, false
			}
			c := wallet.Choice{Field: wallet.ChoiceContinue, Value: boolValue(d.cont)}
			if d.cont || main.Green {
				if !s.record(g.ID, d.id, c) {
					return 0, 0, false
				}
			} else {
				last, lastID = &c, d.id
			}
			choices.Continue = d.cont
			p.restart(time.Now())
		} else {
			p.restart(time.UnixMilli(g.ContinueAt)) // chosen before: its draw keeps its pace
		}
		if choices.Continue {
			s.hub.metrics.SoCContinued.Inc()
			var mask [engine.GridSize + 1]bool
			for _, n := range o.Picks {
				mask[n] = true
			}
			for i, n := range o.SoCDraw {
				if !p.at(time.Duration(i+1)*cfg.SoCInterval, msg(protocol.Message{Type: protocol.TSoCDraw, Game: g.ID, Pos: i, Number: int(n), Hit: mask[n]})) {
					return 0, 0, false
				}
			}
		}
	}
	res, err := tab.Settle(o, choices)
	if err != nil {
		return 0, 0, false
	}
	if res.Continued && !s.send(msg(protocol.Message{Type: protocol.TSoCResult, Game: g.ID, Hits: res.SoCHits, Gain: res.SoCGain})) {
		return 0, 0, false
	}
	if main.Green {
		s.hub.metrics.ExtraPlayed.Inc()
		if g.Box == nil {
			boxCh := s.expect(g.ID, "box")
			if !s.send(msg(protocol.Message{Type: protocol.TExtraOffer, Game: g.ID})) {
				return 0, 0, false
			}
			d, ok := s.decide(boxCh, p.aheadBy())
			if !ok {
				return 0, 0, false
			}
			last, lastID = &wallet.Choice{Field: wallet.ChoiceBox, Value: strconv.Itoa(d.box)}, d.id
			choices.Box = d.box
			if res, err = tab.Settle(o, choices); err != nil {
				return 0, 0, false
			}
		}
	}

	if !p.wait() {
		return 0, 0, false
	}
	st, err := s.settle(g, last, res)
	if errors.Is(err, wallet.ErrSettled) {
		// Settled meanwhile by someone else, without this choice: as when
		// recording it fails, the player's next connection shows the game.
		s.fail(lastID, protocol.Errf(protocol.CodeInternal, "your choice could not be recorded; reconnect to see the game"))
	}
	if err != nil {
		return 0, 0, false
	}
	if lastID != "" {
		s.send(msg(protocol.Message{Type: protocol.TOk, ID: lastID, Game: g.ID}))
	}
	if main.Green { // the boxes are shown once the box chosen is recorded
		box := res.Box
		s.send(msg(protocol.Message{Type: protocol.TExtraResult, Game: g.ID, Box: &box, Boxes: o.Boxes[:], Prize: res.ExtraWin}))
	}
	s.send(msg(protocol.Message{Type: protocol.TSettled, Game: g.ID, Win: st.Win, Balance: &st.Balance, Result: &res}))
	return st.Win, st.Balance, true
}

// settle pays the game (once, whatever happens), with its last choice if
// any, and updates the figures.
func (s *Session) settle(g *wallet.GameState, last *wallet.Choice, res engine.Result) (wallet.Settlement, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var st wallet.Settlement
	err := retryTransient(ctx, func() (err error) {
		t0 := time.Now()
		st, err = s.hub.bank.Settle(ctx, s.player, s.fenceToken(), &g.GameRecord, last, res)
		s.hub.metrics.ObserveRedis("settle", t0, err)
		s.leaseExtended(t0, err)
		return err
	})
	if err != nil {
		switch {
		case errors.Is(err, wallet.ErrFenced):
			s.takenOver()
		case errors.Is(err, wallet.ErrAlreadyChosen), errors.Is(err, wallet.ErrSettled):
			// The last choice was not recorded: another session recorded a
			// different one first (it stands, as in record), or the game
			// was settled without it (playGame tells the player).
		default:
			s.log().Error().Err(err).Str("game", g.ID).Msg("settle failed; left for recovery")
			s.fail("", protocol.Errf(protocol.CodeInternal, "your game is safe and will be settled; reconnect in a moment"))
		}
		return st, err
	}
	s.hub.settledOrOwed(ctx, s.player, g.ID, st)
	if !st.Dup {
		s.hub.countSettled(s.player, g, res)
	}
	return st, nil
}

// countSettled updates the metrics and events of a settled game.
func (h *Hub) countSettled(player string, g *wallet.GameState, res engine.Result) {
	o := &g.Outcome
	h.metrics.GamesSettled.WithLabelValues(metrics.Labels(len(o.Picks), o.Stake)...).Inc()
	h.metrics.WinsCents.Add(float64(res.Win))
	h.Events.settled(len(o.Picks), o.Stake, res.Win)
	if res.Win >= BigWinFactor*o.Stake {
		h.metrics.BigWins.Inc()
		b, _ := json.Marshal(BigWin{time.Now().UnixMilli(), player, g.ID, o.Stake, res.Win})
		h.store.AddBigWin(context.Background(), b)
	}
}
