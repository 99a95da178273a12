package app

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"keno/engine"
	"keno/protocol"
)

// The three screens the client is made for.
var screens = []struct {
	name string
	w, h int64
}{{"phone", 390, 844}, {"tablet", 768, 1024}, {"desktop", 1440, 900}}

// watchScript runs in every page before the game's scripts: it notes each
// change of the draw (when, which game, how many numbers, the result) and
// whether the gauge and the result were inside the viewport, above the
// responsible-gaming bar, at that moment.
const watchScript = `
window.__log = [];
new MutationObserver(() => {
  const g = document.getElementById("gauge"), s = document.getElementById("settled"), r = document.getElementById("main-result");
  if (!g || !s || document.getElementById("game").hidden) return;
  const e = { t: performance.now(), title: document.getElementById("play-title").textContent,
    n: g.querySelectorAll(".numbered").length, settled: s.textContent };
  const last = __log[__log.length - 1];
  if (last && last.title === e.title && last.n === e.n && last.settled === e.settled) return;
  const bar = document.getElementById("rg").getBoundingClientRect().top;
  const inside = (el) => { const b = el.getBoundingClientRect(); return b.top >= 0 && b.bottom <= bar + 1 && b.left >= 0 && b.right <= innerWidth + 1; };
  e.inView = inside(g) && inside(r) && inside(s);
  __log.push(e);
}).observe(document, { subtree: true, childList: true, characterData: true });`

// playerPage funds player and opens a page at a screen size that answers
// offers by itself (signIn comes next).
func playerPage(t *testing.T, ts *testServer, player string, deposit, w, h int64) context.Context {
	if _, err := ts.app.Store.Deposit(context.Background(), player, "seed", deposit); err != nil {
		t.Fatal(err)
	}
	ctx := openPage(t, w, h)
	answerOffers(t, ctx)
	return ctx
}

// autoAnswer, for tests that play whole tickets: it answers every offer as
// a hurried player would (Stop; the first box), through the buttons.
const autoAnswer = `setInterval(() => {
  const stop = document.getElementById("btn-stop"), box = document.querySelector("#boxes button.box:not(:disabled)");
  if (stop && !document.getElementById("soc").hidden) stop.click();
  if (box && !document.getElementById("extra").hidden) box.click();
}, 50);`

func answerOffers(t *testing.T, ctx context.Context) {
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: autoAnswer}); err != nil {
		t.Fatal(err)
	}
}

type logEntry struct {
	T       float64 `json:"t"`
	Title   string  `json:"title"`
	N       int     `json:"n"`
	Settled string  `json:"settled"`
	InView  bool    `json:"inView"`
}

// openPage opens a browser at one screen size with the draw watched.
func openPage(t *testing.T, w, h int64) context.Context {
	ctx := browser(t)
	// An uncaught exception in the page is a bug, whatever the screen shows.
	chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			t.Errorf("exception in the page: %s (%s:%d)", msg, d.URL, d.LineNumber)
		}
	})
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchScript}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h)); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// signIn opens the game page as player (the operator's token in the
// fragment) and waits for the grid.
func signIn(t *testing.T, ctx context.Context, ts *testServer, player string) {
	t.Helper()
	token := ts.app.Signer.Issue(player, time.Now().Add(time.Hour))
	if err := chromedp.Do(ctx,
		chromedp.Navigate("about:blank"), // a change of fragment alone would not load the page
		chromedp.Navigate(ts.base+"/#token="+token),
		chromedp.WaitVisible(chromedp.CSS(`#grid button[data-n="40"]`)),
	); err != nil {
		t.Fatalf("sign in %s: %v", player, err)
	}
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("message")?.textContent || ""`))
		t.Fatalf("%s: %v (the page says %q)", what, err, msg)
	}
}

func click(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }

func until(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(20*time.Second))
}

func pick(picks ...int) []chromedp.Action[chromedp.Void] {
	var a []chromedp.Action[chromedp.Void]
	for _, n := range picks {
		a = append(a, click(fmt.Sprintf(`#grid button[data-n="%d"]`, n)))
	}
	return a
}

// axeCheck runs axe-core (installed by .ci/deps) on the page as it is and
// fails on any violation, whatever its impact.
func axeCheck(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	if !eval[bool](t, ctx, `typeof axe !== "undefined"`) {
		src, err := os.ReadFile("../../client-js/node_modules/axe-core/axe.min.js")
		if err != nil {
			t.Fatalf("axe-core missing (run make deps): %v", err)
		}
		eval[bool](t, ctx, string(src)+";true")
	}
	type violation struct {
		ID, Impact, Help string
		Nodes            []struct{ Target []string }
	}
	vs := eval[[]violation](t, ctx, `axe.run(document, { resultTypes: ["violations"] }).then(r => r.violations.map(v => ({ID: v.id, Impact: v.impact, Help: v.help, Nodes: v.nodes.map(n => ({Target: n.target}))})))`, chromedp.EvalAwaitPromise)
	for _, v := range vs {
		var where []string
		for _, n := range v.Nodes {
			where = append(where, strings.Join(n.Target, " "))
		}
		t.Errorf("axe on %s: %s (%s) %s at %v", what, v.ID, v.Impact, v.Help, where)
	}
}

// Every screen of the game at the three sizes: axe-core finds nothing on
// any; the draw stays in view; no sideways scroll; touch targets ≥ 44 px;
// screenshots for anyone to look at. Along the way a whole game is played
// by clicking, checked against the recorded outcome, and verified in the
// browser.
func TestBrowserScreens(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) {
		c.Session.ColorInterval, c.Session.NumberInterval, c.Session.SoCInterval = 30*time.Millisecond, 120*time.Millisecond, 100*time.Millisecond
	})
	dir := screenshotDir(t)
	for _, sc := range screens {
		t.Run(sc.name, func(t *testing.T) {
			player := "screens-" + sc.name
			ts.app.Store.Deposit(context.Background(), player, "seed", 1_000)
			picks := []int{4, 9, 15, 22, 31, 38}
			o := forceNext(t, ts.app.Redis, player, picks, 200, func(o *engine.Outcome, m engine.Main) bool { return m.SoC && m.Green && !m.Red })
			want, _ := engine.Default().Settle(&o, engine.Choices{Continue: true, Box: 2})
			ctx := openPage(t, sc.w, sc.h)
			name := func(s string) string { return sc.name + "-" + s }

			do(t, ctx, "login page", chromedp.Navigate(ts.base+"/"), chromedp.WaitVisible(chromedp.CSS("#login-name")))
			axeCheck(t, ctx, "login")
			shot(t, ctx, dir, name("1-login"))

			signIn(t, ctx, ts, player)
			if sc.name == "desktop" {
				// The first load: everything the page needs, within 150 KB.
				bytes := eval[float64](t, ctx, `performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).reduce((s, e) => s + (e.transferSize || e.encodedBodySize || 0), 0)`)
				ready := eval[float64](t, ctx, `performance.getEntriesByName("keno-interactive")[0].startTime`)
				t.Logf("first load: %.1f KB transferred, the grid takes picks %.0f ms after navigation (welcome included)", bytes/1024, ready)
				if bytes > 150*1024 {
					t.Errorf("first load weighs %.1f KB, over 150 KB", bytes/1024)
				}
			}
			if got := text(t, ctx, "#balance"); norm(got) != "10,00 €" {
				t.Fatalf("balance shown %q", got)
			}
			do(t, ctx, "pick", pick(picks...)...)
			do(t, ctx, "stake", click(`input[name="stake"][value="200"]`))
			if got := text(t, ctx, "#pick-count"); got != "6 / 8" {
				t.Fatalf("pick count shown %q", got)
			}
			if !strings.Contains(norm(text(t, ctx, "#potential")), "6 bons : 4 000,00 €") {
				t.Errorf("the potential winnings for 6 numbers at 2 € are not shown: %q", text(t, ctx, "#potential"))
			}
			checkLayout(t, ctx)
			axeCheck(t, ctx, "game")
			shot(t, ctx, dir, name("2-game"))

			do(t, ctx, "review", click("#btn-review"), chromedp.WaitVisible(chromedp.CSS("#summary")))
			if got := norm(text(t, ctx, "#summary-total")); got != "Total : 2,00 €" {
				t.Fatalf("summary total %q", got)
			}
			axeCheck(t, ctx, "summary")
			shot(t, ctx, dir, name("3-summary"))

			do(t, ctx, "confirm", click("#btn-confirm"), until(`document.querySelectorAll("#gauge .numbered").length >= 3`))
			axeCheck(t, ctx, "reveal")
			shot(t, ctx, dir, name("4-reveal"))
			do(t, ctx, "stop or continue", chromedp.WaitVisible(chromedp.CSS("#soc")))
			// The gauge shows the recorded colours and numbers, hits marked.
			colors := eval[[]string](t, ctx, `[...document.querySelectorAll("#gauge .ball")].map(b => b.dataset.color)`)
			numbers := eval[[]string](t, ctx, `[...document.querySelectorAll("#gauge .ball .n")].map(n => n.textContent)`)
			m := engine.Default().Evaluate(&o)
			for i := range o.Colors {
				if colors[i] != o.Colors[i].String() || numbers[i] != fmt.Sprint(o.Numbers[i]) {
					t.Fatalf("gauge slot %d shows %s %s, recorded %s %d", i, colors[i], numbers[i], o.Colors[i], o.Numbers[i])
				}
			}
			if hits := eval[int](t, ctx, `document.querySelectorAll("#gauge .ball.hit").length`); hits != m.Matches {
				t.Fatalf("%d hits highlighted, %d matches", hits, m.Matches)
			}
			if drawn := eval[int](t, ctx, `document.querySelectorAll("#board .cell.drawn").length`); drawn != m.Revealed {
				t.Errorf("%d numbers marked on the board, %d drawn", drawn, m.Revealed)
			}
			if !strings.Contains(norm(text(t, ctx, "#soc-question")), euroFR(m.Gain)) {
				t.Errorf("the offer does not state the gain %s: %q", euroFR(m.Gain), text(t, ctx, "#soc-question"))
			}
			if eval[int](t, ctx, `document.querySelectorAll("#soc-table li").length`) < 2 {
				t.Error("the offer does not say what Continue can pay")
			}
			// Equal weight, neither pre-focused.
			if f := eval[string](t, ctx, `document.activeElement.id`); f == "btn-continue" || f == "btn-stop" {
				t.Errorf("%s is pre-focused", f)
			}
			if eval[string](t, ctx, `getComputedStyle(document.getElementById("btn-stop")).backgroundColor`) != eval[string](t, ctx, `getComputedStyle(document.getElementById("btn-continue")).backgroundColor`) {
				t.Error("Stop and Continue do not look alike")
			}
			axeCheck(t, ctx, "stop-or-continue offer")
			shot(t, ctx, dir, name("5-stop-or-continue"))

			do(t, ctx, "continue", click("#btn-continue"), chromedp.WaitVisible(chromedp.CSS("#boxes button.box")))
			axeCheck(t, ctx, "extra offer")
			shot(t, ctx, dir, name("6-extra"))
			do(t, ctx, "open a box", click("#boxes button:nth-child(3)"),
				until(`document.querySelector("#settled").textContent.length > 0 && !document.querySelector("#ticket-done").hidden`))
			if n := eval[int](t, ctx, `document.querySelectorAll("#soc-draw li").length`); n != 3 {
				t.Fatalf("%d Stop-or-Continue numbers shown", n)
			}
			settled := norm(text(t, ctx, "#settled"))
			switch {
			case want.Win > 200 && !strings.Contains(settled, "Vous gagnez "+euroFR(want.Win)):
				t.Errorf("settled shows %q for a win of %s", settled, euroFR(want.Win))
			case want.Win > 0 && want.Win < 200 && settled != fmt.Sprintf("Gain %s pour une mise de 2,00 €", euroFR(want.Win)):
				t.Errorf("a win below the stake shows %q", settled)
			case want.Win == 0 && settled != "Pas de gain cette fois.":
				t.Errorf("no win shows %q", settled)
			}
			if got, wallet := norm(text(t, ctx, "#balance")), euroFR(ts.balance(player)); got != wallet || ts.balance(player) != 1_000-200+want.Win {
				t.Fatalf("balance shown %q, wallet %s", got, wallet)
			}
			for _, e := range eval[[]logEntry](t, ctx, `__log`) {
				if (e.N > 0 || e.Settled != "") && !e.InView {
					t.Errorf("the gauge or the result left the screen during the reveal (%d numbers shown)", e.N)
					break
				}
			}
			axeCheck(t, ctx, "settled")
			shot(t, ctx, dir, name("7-settled"))
			if sc.name == "desktop" {
				// An error a person understands: a ticket above the balance.
				ts.app.Store.Withdraw(context.Background(), player, "empty", ts.balance(player))
				do(t, ctx, "replay without money", click("#btn-new"), click("#btn-replay"), chromedp.WaitVisible(chromedp.CSS("#summary")),
					click("#btn-confirm"), until(`document.querySelector("#message").dataset.kind === "error"`))
				if msg := text(t, ctx, "#message"); !strings.Contains(msg, "Solde insuffisant") || !strings.Contains(msg, "Déposer") {
					t.Errorf("insufficient funds says %q", msg)
				}
				shot(t, ctx, dir, name("7b-insufficient-funds"))
				do(t, ctx, "back", click("#btn-back"))
				// Everything the page loaded came from this server: no CDN, no fonts from elsewhere.
				for _, u := range eval[[]string](t, ctx, `performance.getEntriesByType("resource").map(e => e.name)`) {
					if !strings.HasPrefix(u, ts.base) && !strings.HasPrefix(u, strings.Replace(ts.base, "http", "ws", 1)) {
						t.Errorf("the page fetched %s from elsewhere", u)
					}
				}
			}

			do(t, ctx, "rules", click("#btn-rules"), chromedp.WaitVisible(chromedp.CSS("#rules-body table")))
			checkLayout(t, ctx)
			axeCheck(t, ctx, "rules")
			shot(t, ctx, dir, name("8-rules"))
			do(t, ctx, "close rules", click("#rules-close"))

			do(t, ctx, "history", click("#btn-history"), chromedp.WaitVisible(chromedp.CSS("#history-rows tr")))
			checkLayout(t, ctx)
			axeCheck(t, ctx, "history")
			shot(t, ctx, dir, name("9-history"))
			do(t, ctx, "detail", click("#history-rows tr:first-child .actions button:first-child"), chromedp.WaitVisible(chromedp.CSS("#detail-body .balls")))
			axeCheck(t, ctx, "game detail")
			do(t, ctx, "verify", click("#detail-verify"), chromedp.WaitVisible(chromedp.CSS("#verify-rotate")),
				click("#verify-rotate"), until(`document.getElementById("verify-seed").value.length > 0`),
				click(`#verify-form button[type="submit"]`), until(`document.getElementById("verify-result").dataset.verdict`))
			if v := eval[string](t, ctx, `document.getElementById("verify-result").dataset.verdict`); v != "ok" {
				t.Errorf("the browser's verification of a real game says %s: %s", v, text(t, ctx, "#verify-result"))
			}
			axeCheck(t, ctx, "verify")
			shot(t, ctx, dir, name("10-verify"))
			do(t, ctx, "verify a wrong seed", chromedp.SetValue(chromedp.CSS("#verify-seed"), strings.Repeat("ab", 32)),
				click(`#verify-form button[type="submit"]`), until(`document.getElementById("verify-result").dataset.verdict !== "ok"`))
			if v := eval[string](t, ctx, `document.getElementById("verify-result").dataset.verdict`); v != "bad_commit" {
				t.Errorf("a wrong seed is reported as %s", v)
			}
			do(t, ctx, "close", click("#verify-close"))
			// The animated replay plays the stored game again, and leaves the grid being built alone.
			before := text(t, ctx, "#pick-count")
			do(t, ctx, "watch it again", click("#detail-animate"), until(`document.querySelectorAll("#gauge .numbered").length === 0`),
				until(`document.querySelector("#settled").textContent.length > 0`))
			if got := eval[int](t, ctx, `document.querySelectorAll("#gauge .numbered").length`); got != m.Revealed {
				t.Errorf("the replay shows %d numbers, the game revealed %d", got, m.Revealed)
			}
			if got := text(t, ctx, "#pick-count"); got != before {
				t.Errorf("the replay changed the grid being built: %q, was %q", got, before)
			}

			do(t, ctx, "limits", click("#btn-limits"), chromedp.WaitVisible(chromedp.CSS("#lim-cap")))
			axeCheck(t, ctx, "limits")
			shot(t, ctx, dir, name("11-limits"))
			do(t, ctx, "exclude", chromedp.SetValue(chromedp.CSS("#lim-excl"), "2"), click(`#limits-form button[type="submit"]`),
				chromedp.WaitVisible(chromedp.CSS("#confirm-list li")))
			if !strings.Contains(text(t, ctx, "#confirm-list"), "ni raccourcie ni annulée") {
				t.Errorf("the exclusion's confirmation does not say what it means: %q", text(t, ctx, "#confirm-list"))
			}
			axeCheck(t, ctx, "limits confirmation")
			shot(t, ctx, dir, name("12-limits-confirm"))
			do(t, ctx, "back", click("#confirm-no"), click("#limits-close"))
			if l, _ := ts.app.Store.Limits(context.Background(), player); l.ExcludedUntil != 0 {
				t.Error("Back set the exclusion anyway")
			}

			do(t, ctx, "ops page", chromedp.Navigate(ts.admin+"/ops.html#token="+ts.app.Cfg.OpsToken),
				until(`document.getElementById("feed").dataset.state === "open"`))
			axeCheck(t, ctx, "ops")
			shot(t, ctx, dir, name("13-ops"))
		})
	}
}

// checkLayout: no sideways scroll, and every visible control is a touch
// target of at least 44 × 44 px.
func checkLayout(t *testing.T, ctx context.Context) {
	t.Helper()
	if eval[bool](t, ctx, `document.documentElement.scrollWidth > innerWidth + 1`) {
		t.Error("the page scrolls sideways")
	}
	small := eval[[]string](t, ctx, `[...document.querySelectorAll("button, select, input:not([type=radio]), label.stake")].filter(e => {
		const r = e.getBoundingClientRect(); return r.width > 0 && (r.width < 43.5 || r.height < 43.5);
	}).map(e => (e.id || e.className || e.tagName) + " " + Math.round(e.getBoundingClientRect().width) + "x" + Math.round(e.getBoundingClientRect().height))`)
	if len(small) > 0 {
		t.Errorf("touch targets under 44 px: %v", small)
	}
}

// norm makes narrow and non-breaking spaces plain, for comparisons.
func norm(s string) string {
	return strings.NewReplacer("\u202f", " ", "\u00a0", " ").Replace(strings.TrimSpace(s))
}

// euroFR writes cents as the French page does: "1 234,50 €".
func euroFR(c int64) string {
	whole := fmt.Sprint(c / 100)
	for i := len(whole) - 3; i > 0; i -= 3 {
		whole = whole[:i] + " " + whole[i:]
	}
	return fmt.Sprintf("%s,%02d €", whole, c%100)
}

// A 3-grid ticket at a human pace in the page: each game's result stays on
// screen at least 2 s before the next game starts, and the ticket ends with
// a summary of every grid's win.
func TestBrowserTicketHoldsEachResult(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) {
		c.Session.ColorInterval, c.Session.NumberInterval = 20*time.Millisecond, 40*time.Millisecond
		c.Session.ResultHold = 2500 * time.Millisecond // the human profile's floor
	})
	ctx := playerPage(t, ts, "pacer", 5_000, 1440, 900)
	signIn(t, ctx, ts, "pacer")
	steps := pick(3, 7, 11, 19, 26)
	steps = append(steps, click("#btn-add"))
	steps = append(steps, pick(1, 2, 3, 4)...)
	steps = append(steps, click("#btn-add"))
	steps = append(steps, pick(10, 20, 30)...)
	steps = append(steps, click("#btn-review"), chromedp.WaitVisible(chromedp.CSS("#summary")), click("#btn-confirm"),
		until(`!document.getElementById("ticket-done").hidden`))
	do(t, ctx, "play a 3-grid ticket", steps...)
	log := eval[[]logEntry](t, ctx, `__log`)
	var settledAt float64
	starts := 0
	for i, e := range log {
		if i > 0 && e.Title != log[i-1].Title && strings.HasPrefix(e.Title, "Jeu ") {
			starts++
			if settledAt > 0 {
				if gap := e.T - settledAt; gap < 2000 {
					t.Errorf("%s started %.0f ms after the previous result", e.Title, gap)
				}
			}
			settledAt = 0
		}
		if e.Settled != "" && (i == 0 || log[i-1].Settled == "") {
			settledAt = e.T
		}
	}
	if starts != 3 {
		t.Fatalf("%d games started in the page; log %+v", starts, log)
	}
	wins := eval[[]string](t, ctx, `[...document.querySelectorAll("#ticket-wins li")].map(l => l.textContent)`)
	hist, err := ts.app.Store.History(context.Background(), "pacer", 0, 3)
	if err != nil || len(hist) != 3 || len(wins) != 3 {
		t.Fatalf("summary %v, history %d games (%v)", wins, len(hist), err)
	}
	for _, g := range hist {
		if want := fmt.Sprintf("Grille %d : %s", g.Index+1, euroFR(g.Win)); norm(wins[g.Index]) != want {
			t.Errorf("summary line %q, want %q", wins[g.Index], want)
		}
	}
}

// A reload in the middle of game 1 of a 3-grid ticket: the page comes back
// signed in, game 1 resumes at once where it was, games 2 and 3 play at
// their pace.
func TestBrowserReloadResumes(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) {
		c.Session.ColorInterval, c.Session.NumberInterval = 20*time.Millisecond, 150*time.Millisecond
		c.Session.ResultHold = time.Second
	})
	picks := []int{3, 8, 14, 21, 27, 33}
	forceNext(t, ts.app.Redis, "reload", picks, 100, func(o *engine.Outcome, m engine.Main) bool {
		return !m.SoC && !m.Green && m.Revealed == engine.Drawn
	})
	ctx := playerPage(t, ts, "reload", 5_000, 390, 844)
	signIn(t, ctx, ts, "reload")
	steps := pick(picks...)
	for i := 0; i < 2; i++ {
		steps = append(append(steps, click("#btn-add")), pick(picks...)...)
	}
	steps = append(steps, click("#btn-review"), chromedp.WaitVisible(chromedp.CSS("#summary")), click("#btn-confirm"),
		until(`document.querySelectorAll("#gauge .numbered").length >= 3`))
	do(t, ctx, "start a 3-grid ticket", steps...)
	shown := eval[int](t, ctx, `document.querySelectorAll("#gauge .numbered").length`)
	do(t, ctx, "reload", chromedp.Reload(), until(`!document.getElementById("ticket-done").hidden`))
	log := eval[[]logEntry](t, ctx, `__log`)
	for len(log) > 0 && !strings.HasPrefix(log[0].Title, "Jeu ") {
		log = log[1:] // the page before the game came back
	}
	if len(log) == 0 || log[0].Title != "Jeu 1 sur 3" {
		t.Fatalf("after the reload the page shows %+v", log)
	}
	var back, caughtUp, end float64 = log[0].T, -1, log[len(log)-1].T
	for _, e := range log {
		if e.Title == "Jeu 1 sur 3" && e.N >= shown && caughtUp < 0 {
			caughtUp = e.T
		}
	}
	if caughtUp < 0 || caughtUp-back > 500 {
		t.Errorf("game 1 took %.0f ms to come back to its %d numbers", caughtUp-back, shown)
	}
	// Games 2 and 3 were not started: two holds of 1 s at least, plus their reveals.
	if end-back < 2*1000+2*10*150 {
		t.Errorf("the rest of the ticket took %.0f ms: games 2 and 3 were rushed", end-back)
	}
	if got := eval[int](t, ctx, `document.querySelectorAll("#ticket-wins li").length`); got != 3 {
		t.Errorf("the ticket summary lists %d grids", got)
	}
}

// French by default; the switch to English works, is kept across visits,
// and neither page shows a string of the other language.
func TestBrowserLanguages(t *testing.T) {
	ts := startServer(t, nil)
	ctx := playerPage(t, ts, "polyglot", 1_000, 1440, 900)
	signIn(t, ctx, ts, "polyglot")
	if lang := eval[string](t, ctx, `document.documentElement.lang`); lang != "fr" {
		t.Fatalf("lang=%q by default", lang)
	}
	do(t, ctx, "play", append(pick(5, 10, 15), click("#btn-review"), chromedp.WaitVisible(chromedp.CSS("#summary")), click("#btn-confirm"),
		until(`!document.getElementById("ticket-done").hidden`), click("#btn-rules"), chromedp.WaitVisible(chromedp.CSS("#rules-body table")))...)
	foreign := func(other string) []string {
		return eval[[]string](t, ctx, `(async () => {
			const mine = (await import("/lang/" + document.documentElement.lang + ".js")).default;
			const other = (await import("/lang/`+other+`.js")).default;
			const own = new Set(Object.values(mine).flatMap(v => v.split(/\{\w+\}/)));
			const words = Object.values(other).flatMap(v => v.split(/\{\w+\}/)).map(s => s.trim()).filter(s => s.length >= 6 && !own.has(s) && ![...own].some(o => o.includes(s)));
			const shown = document.body.innerText + " " + [...document.querySelectorAll("[aria-label],[title]")].map(e => (e.getAttribute("aria-label") || "") + " " + (e.title || "")).join(" ");
			return words.filter(w => shown.includes(w));
		})()`, chromedp.EvalAwaitPromise)
	}
	if f := foreign("en"); len(f) > 0 {
		t.Errorf("English on the French page: %q", f)
	}
	do(t, ctx, "to English", click("#rules-close"), click("#btn-lang"), until(`document.documentElement.lang === "en"`), click("#btn-rules"),
		chromedp.WaitVisible(chromedp.CSS("#rules-body table")))
	if f := foreign("fr"); len(f) > 0 {
		t.Errorf("French on the English page: %q", f)
	}
	if got := norm(text(t, ctx, "#balance")); !strings.HasPrefix(got, "€") {
		t.Errorf("balance in English shown %q", got)
	}
	do(t, ctx, "come back", chromedp.Navigate("about:blank"), chromedp.Navigate(ts.base+"/"), until(`document.documentElement.lang === "en"`))
}

// A player name the server refuses (accent, space, too long) gets the
// server's reason on screen at once, in the page's language; the focus
// stays on the field.
func TestBrowserLoginErrors(t *testing.T) {
	ts := startServer(t, nil)
	ctx := openPage(t, 390, 844)
	do(t, ctx, "login page", chromedp.Navigate(ts.base+"/"), chromedp.WaitVisible(chromedp.CSS("#login-name")))
	for _, name := range []string{"Élodie", "jean pierre", strings.Repeat("x", 65)} {
		do(t, ctx, "submit "+name, chromedp.SetValue(chromedp.CSS("#login-name"), name), click(`#login-form button[type="submit"]`),
			until(`document.getElementById("login-error").textContent.length > 0`))
		if msg := text(t, ctx, "#login-error"); !strings.Contains(msg, "Nom de joueur invalide") {
			t.Errorf("%q: the page says %q", name, msg)
		}
		if f := eval[string](t, ctx, `document.activeElement.id`); f != "login-name" {
			t.Errorf("%q: focus on %q", name, f)
		}
		do(t, ctx, "clear", chromedp.Evaluate[chromedp.Void](`document.getElementById("login-error").textContent = ""`))
	}
	// A valid name plays, and the focus lands in the game.
	do(t, ctx, "sign in", chromedp.SetValue(chromedp.CSS("#login-name"), "elodie"), click(`#login-form button[type="submit"]`),
		chromedp.WaitVisible(chromedp.CSS(`#grid button[data-n="40"]`)))
	if f := eval[string](t, ctx, `document.activeElement.dataset.n || document.activeElement.id`); f != "1" {
		t.Errorf("after login the focus is on %q, not the grid", f)
	}
	// The grid is one Tab stop (arrows move within it): Review is a few Tabs away.
	tabs := 0
	for ; tabs < 20 && eval[string](t, ctx, `document.activeElement.id`) != "btn-review"; tabs++ {
		do(t, ctx, "tab", chromedp.KeyEvent("\t"))
	}
	if tabs >= 20 {
		t.Errorf("Review is not reachable within 20 Tabs from the grid")
	}
	t.Logf("Review is %d Tab presses from the grid", tabs)
	do(t, ctx, "pick by keyboard", chromedp.Focus(chromedp.CSS(`#grid button[data-n="1"]`)), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(" "))
	if got := eval[string](t, ctx, `document.querySelector('#grid button[data-n="2"]').getAttribute("aria-pressed")`); got != "true" {
		t.Errorf("ArrowRight then Space did not pick 2 (aria-pressed=%s)", got)
	}
}

// The reality check interrupts play between games with the time played and
// the session's net result.
func TestBrowserRealityCheck(t *testing.T) {
	ts := startServer(t, nil)
	ctx := playerPage(t, ts, "reality", 1_000, 768, 1024)
	do(t, ctx, "a short interval", chromedp.Navigate(ts.base+"/"), chromedp.Evaluate[chromedp.Void](`localStorage.setItem("keno-reality-ms", "1500")`))
	signIn(t, ctx, ts, "reality")
	do(t, ctx, "play", append(pick(5, 10, 15), click("#btn-review"), chromedp.WaitVisible(chromedp.CSS("#summary")), click("#btn-confirm"),
		until(`document.getElementById("reality-dialog").open`))...)
	if got := norm(text(t, ctx, "#reality-text")); !strings.Contains(got, "Résultat net de cette session") || !strings.Contains(got, "1,00 € misés") {
		t.Errorf("the reality check says %q", got)
	}
	axeCheck(t, ctx, "reality check")
	do(t, ctx, "keep playing", click("#reality-go"), until(`!document.getElementById("reality-dialog").open`))
}

// A server at its limit of games in play refuses the page's ticket busy;
// the page says so (nothing debited), waits the retry_ms and tries again,
// and the ticket goes through once the game in play has finished.
func TestBrowserBusyRetries(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) {
		c.Session.MaxInPlay = 1
		c.Session.ColorInterval, c.Session.NumberInterval = 150*time.Millisecond, 150*time.Millisecond
	})
	ctx := playerPage(t, ts, "patient", 1_000, 768, 1024)
	signIn(t, ctx, ts, "patient")
	do(t, ctx, "watch the messages", chromedp.Evaluate[chromedp.Void](`window.said = [];
new MutationObserver(() => said.push(document.getElementById("message").textContent)).observe(document.getElementById("message"), {childList: true, subtree: true});`))
	occupier := ts.player("occupier", 1_000)
	confirm(t, occupier, grid(100, 1, 2, 3, 4, 5))
	do(t, ctx, "ask for a ticket while the server is full", append(pick(5, 10, 15), click("#btn-review"),
		until(`said.some((m) => m.includes("Beaucoup de joueurs") && m.includes("rien n'a été débité"))`))...)
	if bal := ts.balance("patient"); bal != 1_000 {
		t.Fatalf("a busy refusal debited: balance %d", bal)
	}
	if _, err := occupier.Follow(ctxT(t), protocol.Strategy{}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "the page tried again", chromedp.WaitVisible(chromedp.CSS("#summary")), click("#btn-confirm"),
		until(`document.getElementById("balance").dataset.cents === "900"`))
	if n := eval[int](t, ctx, `said.filter((m) => m.includes("Beaucoup de joueurs")).length`); n < 1 {
		t.Fatalf("the busy message was shown %d times", n)
	}
}

// The operator's console in Chromium: log in, find a player, recall one of
// their games, start maintenance (a client's ticket is refused with a typed
// maintenance error; a game in play finishes), and lift it.
func TestBrowserOpsConsole(t *testing.T) {
	ts := startServer(t, nil, func(c *Config) {
		c.Session.ColorInterval, c.Session.NumberInterval = 30*time.Millisecond, 80*time.Millisecond
	})
	dir := screenshotDir(t)
	known := ts.player("console-known", 5_000)
	log, err := known.Play(ctxT(t), []protocol.Grid{grid(100, 4, 8, 15, 16, 23, 40)}, protocol.Strategy{})
	if err != nil {
		t.Fatal(err)
	}
	gameID := log.Games[0].Game
	ctx := openPage(t, 1440, 900)
	do(t, ctx, "console login", chromedp.Navigate(ts.admin+"/ops.html#token="+ts.app.Cfg.OpsToken),
		until(`document.getElementById("feed").dataset.state === "open" && document.getElementById("role").textContent === "role: operator"`))
	do(t, ctx, "find the player", chromedp.SetValue(chromedp.CSS("#lookup-id"), "console-known"), click(`#lookup button[type="submit"]`),
		until(`!document.getElementById("player").hidden && document.querySelectorAll("#player-games tr").length === 1`))
	if facts := text(t, ctx, "#player-facts"); !strings.Contains(facts, "intact") || !strings.Contains(facts, engine.Euros(ts.balance("console-known"))) {
		t.Errorf("the player's facts: %q", facts)
	}
	do(t, ctx, "recall", click("#player-games button"), until(`!document.getElementById("recall").hidden`))
	if got := text(t, ctx, "#recall"); !strings.Contains(got, "game "+gameID) || !strings.Contains(got, "drawn ") {
		t.Errorf("the recalled game: %q", got)
	}
	axeCheck(t, ctx, "console with a player")
	shot(t, ctx, dir, "ops-console-player")

	// A game in play when maintenance starts.
	busy := ts.player("console-busy", 5_000)
	confirm(t, busy, grid(100, 1, 2, 3, 4, 5, 6))
	do(t, ctx, "start maintenance", click("#maint-on"), until(`document.getElementById("maint-state").textContent.startsWith("MAINTENANCE")`))
	_, err = known.Request(ctxT(t), &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(100, 7, 8, 9)}})
	if errCode(err) != "maintenance" {
		t.Fatalf("a ticket during maintenance: %v", err)
	}
	if done, err := busy.Follow(ctxT(t), protocol.Strategy{}); err != nil || done.Done == nil {
		t.Fatalf("the game in play did not finish during maintenance: %v", err)
	}
	shot(t, ctx, dir, "ops-console-maintenance")
	do(t, ctx, "end maintenance", click("#maint-off"), until(`document.getElementById("maint-state").textContent.startsWith("open")`))
	if _, err := known.Request(ctxT(t), &protocol.Request{Type: protocol.TTicket, Grids: []protocol.Grid{grid(100, 7, 8, 9)}}); err != nil {
		t.Fatalf("a ticket after maintenance: %v", err)
	}
}
