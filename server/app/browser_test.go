package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"keno/engine"
	"keno/protocol"
)

// browser starts Debian's headless Chromium. It is a failure, never a skip,
// when Chromium is missing: `make test` installs it (.ci/deps).
func browser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: run `make deps` (installs Debian's chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel3)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// screenshotDir keeps the screenshots (KENO_SCREENSHOTS, or a temp dir).
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("KENO_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	os.MkdirAll(dir, 0o755)
	return dir
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(buf) < 5000 {
		t.Fatalf("screenshot %s is nearly empty (%d bytes)", name, len(buf))
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func eval[T any](t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// A person plays a whole game in the browser by clicking: picks numbers,
// reviews, confirms, watches the gauge fill, continues at Stop-or-Continue,
// opens an Extra box; what the page shows is checked at each step against
// the recorded outcome, and the balance shown equals the wallet's.
func TestBrowserPlaysAGame(t *testing.T) {
	ts := startServer(t, nil)
	dir := screenshotDir(t)
	ts.app.Store.Deposit(context.Background(), "browser", "seed", 1_000)
	picks := []int{4, 9, 15, 22, 31, 38}
	o := forceNext(t, ts.app.Redis, "browser", picks, 200, func(o *engine.Outcome, m engine.Main) bool { return m.SoC && m.Green && !m.Red })
	want, _ := engine.Default().Settle(&o, engine.Choices{Continue: true, Box: 2})

	ctx := browser(t)
	token := ts.app.Signer.Issue("browser", time.Now().Add(time.Hour))
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.base+"/#token="+token),
		chromedp.WaitVisible(chromedp.CSS("#game")),
		chromedp.WaitVisible(chromedp.CSS(`#grid button[data-n="40"]`)),
	); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, "#balance"); got != "10.00 €" {
		t.Fatalf("balance shown %q", got)
	}
	var actions []chromedp.Action[chromedp.Void]
	for _, n := range picks {
		actions = append(actions, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#grid button[data-n="%d"]`, n))))
	}
	actions = append(actions, chromedp.Click(chromedp.CSS(`input[name="stake"][value="200"]`)))
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, "#pick-count"); got != "6 / 8" {
		t.Fatalf("pick count shown %q", got)
	}
	shot(t, ctx, dir, "1-picked")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#btn-review")), chromedp.WaitVisible(chromedp.CSS("#summary"))); err != nil {
		t.Fatal(err)
	}
	if got := text(t, ctx, "#summary-total"); got != "2.00 €" {
		t.Fatalf("summary total %q", got)
	}
	if got := text(t, ctx, "#summary-grids"); !strings.Contains(got, "4 9 15 22 31 38") {
		t.Fatalf("summary numbers %q", got)
	}
	shot(t, ctx, dir, "2-summary")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#btn-confirm")), chromedp.WaitVisible(chromedp.CSS("#soc"))); err != nil {
		t.Fatal(err)
	}
	// The gauge shows the recorded colours and numbers, hits marked.
	colors := eval[[]string](t, ctx, `[...document.querySelectorAll("#gauge .ball")].map(b => b.dataset.color)`)
	numbers := eval[[]string](t, ctx, `[...document.querySelectorAll("#gauge .ball .n")].map(n => n.textContent)`)
	hits := eval[int](t, ctx, `document.querySelectorAll("#gauge .ball.hit").length`)
	m := engine.Default().Evaluate(&o)
	for i := range o.Colors {
		if colors[i] != o.Colors[i].String() || numbers[i] != strconv.Itoa(int(o.Numbers[i])) {
			t.Fatalf("gauge slot %d shows %s %s, recorded %s %d", i, colors[i], numbers[i], o.Colors[i], o.Numbers[i])
		}
	}
	if hits != m.Matches {
		t.Fatalf("%d hits highlighted, %d matches", hits, m.Matches)
	}
	if got := text(t, ctx, "#soc-gain"); got != engine.Euros(m.Gain) {
		t.Fatalf("SoC gain shown %q, want %s", got, engine.Euros(m.Gain))
	}
	shot(t, ctx, dir, "3-stop-or-continue")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#btn-continue")), chromedp.WaitVisible(chromedp.CSS("#boxes button.box"))); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, dir, "4-extra")
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#boxes button:nth-child(3)")),
		chromedp.WaitVisible(chromedp.CSS("#boxes button.chosen")),
		chromedp.Poll[chromedp.Void](`document.querySelector("#settled").textContent.length > 0 && !document.querySelector("#btn-review").disabled`),
	); err != nil {
		t.Fatal(err)
	}
	if socShown := eval[int](t, ctx, `document.querySelectorAll("#soc-draw li").length`); socShown != 3 {
		t.Fatalf("%d Stop-or-Continue numbers shown", socShown)
	}
	settled := text(t, ctx, "#settled")
	if want.Win > 0 && !strings.Contains(settled, engine.Euros(want.Win)) {
		t.Fatalf("settled shows %q, want a win of %s", settled, engine.Euros(want.Win))
	}
	shot(t, ctx, dir, "5-settled")
	if got, wallet := text(t, ctx, "#balance"), engine.Euros(ts.balance("browser")); got != wallet || ts.balance("browser") != 1_000-200+want.Win {
		t.Fatalf("balance shown %q, wallet %s (expected %s)", got, wallet, engine.Euros(1_000-200+want.Win))
	}

	// An error a person understands: a ticket above the balance.
	ts.app.Store.Withdraw(context.Background(), "browser", "empty", ts.balance("browser"))
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#btn-replay")), chromedp.WaitVisible(chromedp.CSS("#summary")),
		chromedp.Click(chromedp.CSS("#btn-confirm")),
		chromedp.Poll[chromedp.Void](`document.querySelector("#message").dataset.kind === "error"`),
	); err != nil {
		t.Fatal(err)
	}
	if msg := text(t, ctx, "#message"); !strings.Contains(msg, "deposit") {
		t.Fatalf("insufficient funds message %q", msg)
	}
	shot(t, ctx, dir, "6-insufficient-funds")

	// Phone-size screen: everything still reachable.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Click(chromedp.CSS("#btn-back")), chromedp.WaitVisible(chromedp.CSS("#builder"))); err != nil {
		t.Fatal(err)
	}
	if eval[bool](t, ctx, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Error("the page scrolls sideways on a phone-size screen")
	}
	shot(t, ctx, dir, "7-phone")

	// Everything the page loaded came from this server: no CDN, no fonts from elsewhere.
	for _, u := range eval[[]string](t, ctx, `performance.getEntriesByType("resource").map(e => e.name)`) {
		if !strings.HasPrefix(u, ts.base) && !strings.HasPrefix(u, strings.Replace(ts.base, "http", "ws", 1)) {
			t.Errorf("the page fetched %s from elsewhere", u)
		}
	}
}

// The live-ops page, fed during a short load of real games, shows the
// players online, games per second and the observed RTP with its plots.
func TestBrowserOpsPage(t *testing.T) {
	ts := startServer(t, nil)
	dir := screenshotDir(t)
	ctx := browser(t)

	// A short load: 8 players playing continuously for a few seconds.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < 8; p++ {
		c := ts.player(fmt.Sprint("load", p), 100_000)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Play(context.Background(), []protocol.Grid{{QuickPick: 8, Stake: 50}}, protocol.Strategy{}); err != nil {
					return
				}
				time.Sleep(250 * time.Millisecond) // think time: stay within the bet rate limit
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.admin+"/ops.html#token="+ts.app.Cfg.OpsToken),
		chromedp.Poll[chromedp.Void](`document.getElementById("feed").dataset.state === "open" && +document.getElementById("online").textContent === 8 && parseFloat(document.getElementById("gps").textContent) > 0 && document.getElementById("rtp").textContent.endsWith("%")`, chromedp.WithPollingTimeout(20*time.Second)),
	); err != nil {
		t.Fatalf("ops page never showed the load: %v", err)
	}
	painted := eval[bool](t, ctx, `(() => { const c = document.getElementById("chart-gps"); const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) return true; return false; })()`)
	if !painted {
		t.Error("the games/s chart is blank")
	}
	shot(t, ctx, dir, "8-ops")

	// The token left the address bar; the feed rides on an HttpOnly cookie.
	if u := eval[string](t, ctx, `location.href`); strings.Contains(u, "token") {
		t.Errorf("the token stayed in the URL: %s", u)
	}
	if c := eval[string](t, ctx, `document.cookie`); c != "" {
		t.Errorf("the session cookie is readable by scripts: %q", c)
	}
	// Without the cookie the feed is refused, and a wrong token says so.
	if status := eval[int](t, ctx, `fetch("/ops/feed", {credentials: "omit"}).then(r => r.status)`, chromedp.EvalAwaitPromise); status != 401 {
		t.Errorf("feed without a session: %d", status)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate("about:blank"), // a change of fragment alone would not reload the page
		chromedp.Navigate(ts.admin+"/ops.html#token=wrong"),
		chromedp.Poll[chromedp.Void](`document.getElementById("feed").textContent === "unauthorized" && !document.getElementById("login").hidden`, chromedp.WithPollingTimeout(10*time.Second)),
	); err != nil {
		t.Fatalf("a wrong token did not say unauthorized: %v", err)
	}
}

// The JS protocol library's own tests, with node's test runner, against this
// real server.
func TestNodeProtocolLibrary(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not found: run `make deps`")
	}
	ts := startServer(t, nil)
	cmd := exec.Command(node, "--experimental-websocket", "--test", "--test-reporter=spec", "test/")
	cmd.Dir = "../../client-js"
	cmd.Env = append(os.Environ(), "KENO_BASE="+ts.base)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "pass 5") || !strings.Contains(string(out), "fail 0") {
		t.Fatalf("node tests did not all run:\n%s", out)
	}
	t.Logf("node --test:\n%s", out)
}
