package app

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

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

// screenshotDir is where the browser tests leave their screenshots, for
// anyone to look at: KENO_SCREENSHOTS, or bin/screenshots at the
// repository's root (named in the README).
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("KENO_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shot saves what the screen shows (the viewport, as a player sees it).
func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
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
	if rows := eval[int](t, ctx, `document.querySelectorAll("#rtp-picks tr").length`); rows < 1 {
		t.Error("no RTP by pick count shown")
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
	if !strings.Contains(string(out), "pass 8") || !strings.Contains(string(out), "fail 0") {
		t.Fatalf("node tests did not all run:\n%s", out)
	}
	t.Logf("node --test:\n%s", out)
}
