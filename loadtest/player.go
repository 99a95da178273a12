package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"keno/engine"
	"keno/protocol"
)

// exactFigures[stake][picks] = mean and variance of win/stake under
// {always stop, always continue}, from the exact PAR sheet.
var exactFigures = func() map[int64]map[int][2]figure {
	out := map[int64]map[int][2]figure{}
	for _, s := range engine.Default().ComputePAR().Sheets {
		if out[s.Stake] == nil {
			out[s.Stake] = map[int][2]figure{}
		}
		f := func(mean, variance *big.Rat) figure {
			m, _ := mean.Float64()
			v, _ := variance.Float64()
			return figure{m, v}
		}
		out[s.Stake][s.Picks] = [2]figure{f(s.RTPStop, s.VarStop), f(s.RTPContinue, s.VarContinue)}
	}
	return out
}()

// figure is the exact mean and variance of win/stake for one game.
type figure struct{ mean, variance float64 }

// role of a simulated player.
type role int

const (
	normal  role = iota
	flooder      // sends bursts far over the message rate
	vandal       // sends malformed and out-of-turn messages between games
)

type player struct {
	name    string
	url     string // the server this player connects to
	cfg     *config
	stats   *Stats
	rng     *rand.Rand
	role    role
	token   string
	c       *protocol.Client
	balance int64          // what this client believes, from the server's own messages
	seen    map[string]int // game → times seen settled
	deposit int64
	stopAt  time.Time // no ticket begins after it (run's deadline)
}

func login(ctx context.Context, base, name string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/dev/login?player="+url.QueryEscape(name), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("dev login: %s (is the server in dev mode?)", resp.Status)
	}
	var out struct{ Token string }
	return out.Token, json.NewDecoder(resp.Body).Decode(&out)
}

// connect (re)opens the player's connection; record says whether to time
// the reveal on it (a resumed game replays old messages at once).
func (p *player) connect(ctx context.Context, record bool) error {
	t0 := time.Now()
	c, err := protocol.ConnectVersion(ctx, p.url, p.token, p.cfg.protocol())
	if err != nil {
		if p.cfg.stopped(p.url) {
			// Restarting on purpose (-restart-server): a load balancer
			// would not have sent the player there; it tries the next.
			p.stats.error("connect_to_stopped_server", true)
			return err
		}
		p.stats.error("connect", p.cfg.killRedis > 0) // Redis down at that instant: the player retries
		return err
	}
	p.stats.observe(connectTime, time.Since(t0))
	if record {
		// Lateness is how long after its t a message arrived: one that
		// arrived ahead (version 2) is shown on time. (The server's clock
		// is this host's.)
		c.OnTimed = func(m *protocol.Message, at time.Time) {
			p.stats.observe(lateness, max(0, at.Sub(time.UnixMilli(m.T))))
		}
	}
	c.Heartbeat(15 * time.Second)
	p.c = c
	p.balance = *c.Welcome.Balance
	return nil
}

// idle connects and stays connected until ctx ends.
func (p *player) idle(ctx context.Context) {
	tok, err := login(ctx, p.cfg.base, p.name)
	if err != nil {
		p.stats.error("login", false)
		return
	}
	p.token = tok
	if err := p.connect(ctx, false); err != nil {
		return
	}
	p.stats.add(func(s *Stats) { s.IdlePlayers++ })
	<-ctx.Done()
	p.c.Close()
}

// run plays tickets until the deadline, then checks its balance.
func (p *player) run(ctx context.Context, deadline time.Time) {
	p.seen, p.stopAt = map[string]int{}, deadline
	tok, err := login(ctx, p.cfg.base, p.name)
	if err != nil {
		p.stats.error("login", false)
		return
	}
	p.token = tok
	if err := p.connect(ctx, true); err != nil {
		return
	}
	defer func() { p.c.Close() }()
	p.stats.add(func(s *Stats) { s.Connected++ })
	if p.cfg.wallet == "redis" {
		p.deposit = 50_000
		if m, err := p.c.Request(ctx, &protocol.Request{Type: protocol.TDeposit, Amount: p.deposit, Op: "load-" + p.name}); err == nil {
			p.balance = *m.Balance
		} else {
			p.stats.error(errCode(err), false)
		}
	} // seamless: the operator's wallet opens each account funded
	// Resume anything left from an earlier run of the same player.
	p.drain(ctx)

	for time.Now().Before(deadline) && ctx.Err() == nil {
		think := time.Duration(p.rng.ExpFloat64() * float64(p.cfg.think))
		if think >= time.Until(deadline) {
			break // no ticket begins after the deadline
		}
		if !pause(ctx, think) {
			return
		}
		switch p.role {
		case flooder:
			p.flood(ctx)
		case vandal:
			p.vandalise(ctx)
		}
		if err := p.ticket(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			// The connection broke: carry on with a fresh one, playing out
			// first what it resumes (a confirm whose answer was lost with
			// a crashed server may have been accepted).
			if p.reconnect(ctx) != nil {
				return
			}
			p.drain(ctx)
		}
	}
	if p.cfg.wallet == "redis" {
		// Not before the deadline, and spread over two seconds after it:
		// ten thousand balance checks in the run's last seconds, while
		// other players still confirm tickets, were load the run measured
		// as theirs. (Seamless: the operator's books are held against the
		// journal once nothing is owed to it, after the run — seamless.go.)
		pause(ctx, time.Until(deadline)+time.Duration(p.rng.Int64N(int64(2*time.Second))))
		p.verify(ctx)
	}
}

func errCode(err error) string {
	if e, ok := err.(*protocol.Error); ok {
		return e.Code
	}
	return "transport"
}

// ticket plays one ticket: build, confirm, follow to the end.
func (p *player) ticket(ctx context.Context) error {
	n := 1 + p.rng.IntN(p.cfg.maxGrids)
	grids := make([]protocol.Grid, n)
	for i := range grids {
		stake := []int64{50, 100, 200}[p.rng.IntN(3)]
		picks := engine.MinPicks + p.rng.IntN(engine.MaxPicks-engine.MinPicks+1)
		if p.rng.IntN(2) == 0 {
			grids[i] = protocol.Grid{QuickPick: picks, Stake: stake}
		} else {
			grids[i] = protocol.Grid{Picks: p.rng.Perm(engine.GridSize)[:picks], Stake: stake}
			for j := range grids[i].Picks {
				grids[i].Picks[j]++
			}
		}
	}
	sum, err := p.unlessBusy(ctx, &protocol.Request{Type: protocol.TTicket, Grids: grids})
	if err != nil {
		return p.refused(err)
	}
	var t0 time.Time
	acc, err := p.unlessBusy(ctx, &protocol.Request{Type: protocol.TConfirm, Ticket: sum.Ticket}, &t0)
	if err != nil {
		return p.refused(err)
	}
	p.stats.observe(acceptTime, time.Since(t0))
	p.stats.add(func(s *Stats) { s.Tickets++ })
	p.balance = *acc.Balance
	games := map[string]bool{}
	for _, g := range acc.Games {
		games[g.Game] = true
	}
	// Drop the connection in the middle of some tickets, then come back.
	dropAt := -1
	if p.rng.Float64() < p.cfg.disconnect {
		dropAt = p.rng.IntN(10)
	}
	return p.follow(ctx, games, dropAt)
}

// unlessBusy sends req, and again after the retry_ms of each busy refusal
// (counted: the server keeps the games in play on time first), as the
// page does — unless that would be after the run's deadline, when no
// ticket begins (errPastDeadline). sent, if given, is when the last
// attempt went out.
func (p *player) unlessBusy(ctx context.Context, req *protocol.Request, sent ...*time.Time) (*protocol.Message, error) {
	for {
		if len(sent) > 0 {
			*sent[0] = time.Now()
		}
		m, err := p.c.Request(ctx, req)
		e, ok := err.(*protocol.Error)
		if !ok || e.Code != protocol.CodeBusy {
			return m, err
		}
		p.stats.error(protocol.CodeBusy, true)
		wait := time.Duration(e.RetryMS) * time.Millisecond
		if !p.stopAt.IsZero() && time.Now().Add(wait).After(p.stopAt) {
			return nil, errPastDeadline
		}
		if !pause(ctx, wait) {
			return nil, ctx.Err()
		}
	}
}

var errPastDeadline = errors.New("the run's deadline comes before the server's retry_ms")

func (p *player) refused(err error) error {
	if errors.Is(err, errPastDeadline) {
		return nil // the loop ends at the deadline
	}
	if _, ok := err.(*protocol.Error); ok {
		code := errCode(err)
		if code == protocol.CodeWalletUnavailable && p.cfg.wallet == "seamless" {
			// The operator's wallet failed the debit, as injected: the
			// ticket is refused and its debit rolled back; build another.
			p.stats.error(code, true)
			return nil
		}
		if code == protocol.CodeDraining {
			// The server is going away, as announced: a client goes to
			// another one (the caller reconnects).
			p.stats.error(code, true)
			return err
		}
		p.stats.error(code, (code == protocol.CodeRateLimited && p.role != normal) || p.redisFault(code))
		return nil
	}
	return err
}

// redisFault: in a run that kills Redis on purpose, the server's typed
// "something went wrong on our side" answers are the announced effect.
func (p *player) redisFault(code string) bool {
	return p.cfg.killRedis > 0 && (code == protocol.CodeInternal || code == protocol.CodeServerProblem)
}

// follow consumes the pushed messages of the ticket in play.
func (p *player) follow(ctx context.Context, games map[string]bool, dropAt int) error {
	numbers := 0
	var last time.Time  // receipt of the previous message
	var shown time.Time // when the previous message is on screen: at its receipt, or at its t if it came ahead
	var stake int64
	var picks int
	for len(games) > 0 {
		m, err := p.c.Next(ctx)
		if err == nil && m.Type == protocol.TTakenOver {
			err = protocol.ErrClosed
		}
		if err != nil {
			if ctx.Err() == nil && p.reconnect(ctx) == nil {
				p.reconcile(ctx, games)
				continue
			}
			if ctx.Err() != nil {
				// The run's hard stop came first: the server settles these
				// after its grace period (the recovery path), not a fault.
				p.stats.add(func(s *Stats) { s.Abandoned += int64(len(games)) })
				return err
			}
			p.stats.add(func(s *Stats) { s.Unsettled += int64(len(games)) })
			p.stats.error("lost:"+errCode(err)+":"+err.Error(), false)
			return err
		}
		prevShown := shown
		last = time.Now()
		shown = later(shown, last)
		if m.T != 0 {
			shown = later(shown, time.UnixMilli(m.T))
		}
		switch m.Type {
		case protocol.TGameStart:
			stake, picks = m.Stake, len(m.Picks)
		case protocol.TNumber:
			numbers++
			if numbers == dropAt {
				p.c.CloseNow()
			}
		case protocol.TSoCOffer:
			pause(ctx, time.Until(shown)) // a person answers what is on screen
			cont := p.decide()
			p.c.Send(ctx, &protocol.Request{Type: protocol.TChoice, Game: m.Game, Continue: &cont})
		case protocol.TExtraOffer:
			pause(ctx, time.Until(shown))
			box := p.rng.IntN(engine.ExtraBoxes)
			p.c.Send(ctx, &protocol.Request{Type: protocol.TBox, Game: m.Game, Box: &box})
		case protocol.TSettled:
			if !prevShown.IsZero() {
				// Settlement follows the last step on screen.
				p.stats.observe(settleTime, max(0, last.Sub(prevShown)))
			}
			p.seen[m.Game]++
			if p.seen[m.Game] > 1 {
				p.stats.add(func(s *Stats) { s.DoubleSettle++ })
			}
			p.balance = *m.Balance
			delete(games, m.Game)
			p.stats.settled(stake, m.Win, p.exact(stake, picks))
		case protocol.TTicketDone:
			p.balance = *m.Balance
		case protocol.TError:
			p.stats.error(m.Error.Code, p.role != normal || p.redisFault(m.Error.Code))
		}
		p.c.Release(m) // kept nowhere: the next message reuses it
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// pause waits d, or less if ctx ends first (false then).
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *player) decide() bool {
	switch p.cfg.strategy {
	case "continue":
		return true
	case "stop":
		return false
	}
	return p.rng.IntN(2) == 0
}

// reconnect comes back, to the next server of the list when there are
// several: players move between servers mid-game.
func (p *player) reconnect(ctx context.Context) error {
	p.c.CloseNow()
	for attempt := 0; attempt < 10; attempt++ {
		p.url = p.cfg.next(p.url)
		if err := p.connect(ctx, false); err == nil {
			p.stats.add(func(s *Stats) { s.Reconnects++ }) // of any cause: a drop on purpose, a restart, a takeover
			return nil
		}
		if !pause(ctx, time.Duration(50<<attempt)*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("could not reconnect")
}

// reconcile, after a reconnection, accounts for the games that were settled
// while the player was away (their "settled" went to the dropped
// connection): the welcome lists the games the server resumes, and any
// other game awaited must have been settled — it is looked up.
func (p *player) reconcile(ctx context.Context, games map[string]bool) {
	resumed := welcomeGames(p.c)
	p.stats.add(func(s *Stats) { s.Resumed += int64(len(resumed)) })
	for id := range games {
		if resumed[id] {
			continue
		}
		d, err := p.c.Request(ctx, &protocol.Request{Type: protocol.TGame, Game: id})
		if errCode(err) == protocol.CodeNoSuchGame {
			// Accepted, and now unknown to the wallet: an acknowledgement lost.
			delete(games, id)
			p.stats.add(func(s *Stats) { s.LostAcks = append(s.LostAcks, p.name+"/"+id) })
			continue
		}
		if err != nil {
			continue // the connection broke again: the next reconnection looks again
		}
		delete(games, id)
		if d.Detail.Status != "settled" {
			p.stats.add(func(s *Stats) { s.Unsettled++ })
			p.stats.error("not_resumed:"+d.Detail.Status, false)
			continue
		}
		p.seen[id]++
		o := d.Detail.Outcome
		p.stats.settled(o.Stake, d.Detail.Win, p.exact(o.Stake, len(o.Picks)))
	}
}

// welcomeGames is the set of games the server resumes on this connection.
func welcomeGames(c *protocol.Client) map[string]bool {
	out := map[string]bool{}
	for _, g := range c.Welcome.Games {
		out[g.Game] = true
	}
	return out
}

// exact is the exact mean and variance of a game's win/stake under the
// configured strategy (random: an independent fair coin at each offer).
func (p *player) exact(stake int64, picks int) figure {
	f := exactFigures[stake][picks]
	switch p.cfg.strategy {
	case "continue":
		return f[1]
	case "random":
		mean := (f[0].mean + f[1].mean) / 2
		second := (f[0].variance + f[0].mean*f[0].mean + f[1].variance + f[1].mean*f[1].mean) / 2
		return figure{mean, second - mean*mean}
	}
	return f[0]
}

// drain plays out any game resumed at connection.
func (p *player) drain(ctx context.Context) {
	if games := welcomeGames(p.c); len(games) > 0 {
		p.follow(ctx, games, -1)
	}
}

// flood sends a burst well over the per-connection message rate; the
// refusals it earns are expected.
func (p *player) flood(ctx context.Context) {
	for i := 0; i < 30; i++ {
		p.c.Send(ctx, &protocol.Request{Type: protocol.TBalance})
	}
	time.Sleep(200 * time.Millisecond)
	for {
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		m, err := p.c.Next(dctx)
		cancel()
		if err != nil {
			return
		}
		if m.Type == protocol.TError {
			p.stats.error(m.Error.Code, true)
		}
	}
}

// vandalise sends bad input; each must earn a typed error.
func (p *player) vandalise(ctx context.Context) {
	frames := []string{`{"type":`, `{"type":"ticket","id":"v1","grids":[{"picks":[1,1,1],"stake":100}]}`,
		`{"type":"choice","id":"v2","game":"x","continue":true}`, `{"type":"nope","id":"v3"}`}
	for _, f := range frames {
		p.c.SendRaw(ctx, []byte(f))
	}
	for range frames {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		m, err := p.c.NextOf(dctx, protocol.TError)
		cancel()
		if err != nil {
			select {
			case <-p.c.Done():
				return // the connection went away first (a restart): nothing to answer on
			default:
			}
			p.stats.error("bad_input_unanswered", false)
			return
		}
		p.stats.error(m.Error.Code, true)
	}
}

// verify compares what the client saw with the wallet.
func (p *player) verify(ctx context.Context) {
	vctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := p.c.Request(vctx, &protocol.Request{Type: protocol.TBalance})
	if err != nil && errCode(err) == "transport" && p.reconnect(vctx) == nil {
		// The connection had gone (a server restarted while the player
		// thought); the new one's welcome says what was settled meanwhile.
		m, err = p.c.Request(vctx, &protocol.Request{Type: protocol.TBalance})
	}
	if err != nil {
		p.stats.error("verify:"+errCode(err), false)
		return
	}
	if *m.Balance != p.balance {
		p.stats.add(func(s *Stats) {
			s.Mismatches = append(s.Mismatches, fmt.Sprintf("%s: client saw %d, wallet %d", p.name, p.balance, *m.Balance))
		})
	}
}
