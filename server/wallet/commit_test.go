package wallet

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"keno/server/redistest"
)

// pipelines records the command names of every pipeline of scripts or
// reads (GET) a client sends, holds the first until release is closed, and
// calls before(n), if set, before the n-th (from 1) goes.
type pipelines struct {
	mu      sync.Mutex
	sent    [][]string
	release chan struct{}
	before  func(n int)
}

func (p *pipelines) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (p *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var ns []string
		for _, c := range cmds {
			ns = append(ns, c.Name())
		}
		if !slices.Contains(ns, "evalsha") && !slices.Contains(ns, "get") {
			return next(ctx, cmds) // the client's own (a connection's handshake)
		}
		p.mu.Lock()
		p.sent = append(p.sent, ns)
		n := len(p.sent)
		p.mu.Unlock()
		if n == 1 {
			<-p.release
		}
		if p.before != nil {
			p.before(n)
		}
		return next(ctx, cmds)
	}
}

func (p *pipelines) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sent)
}

// waitSent waits until the first pipeline is held in flight.
func (p *pipelines) waitSent() {
	for p.count() == 0 {
		time.Sleep(time.Millisecond)
	}
}

// Scripts called together leave in one pipeline, each caller gets its own
// answer, a script Redis no longer has cached is loaded once and its calls
// sent again together, and a call whose context ended before its batch
// left is not sent.
func TestGroupCommit(t *testing.T) {
	rdb, incr := incrScript(t)
	ctx := context.Background()
	hook := &pipelines{release: make(chan struct{}), before: func(n int) {
		if n == 2 {
			rdb.ScriptFlush(ctx) // as a restarted Redis: NOSCRIPT
		}
	}}
	rdb.AddHook(hook)
	var g groupCommit

	const n = 20
	var wg sync.WaitGroup
	got := make([]int64, n)
	errs := make([]error, n)
	call := func(i int, ctx context.Context) {
		defer wg.Done()
		got[i], errs[i] = g.run(ctx, rdb, incr, []string{fmt.Sprint("k", i)}, i+1).Int64()
	}
	wg.Add(1)
	go call(0, ctx) // leads, and is held in flight
	waitQueued(t, &g, 0)
	hook.waitSent()
	cancelled, cancel := context.WithCancel(ctx)
	for i := 1; i < n; i++ {
		wg.Add(1)
		if i == n-1 {
			go call(i, cancelled)
		} else {
			go call(i, ctx)
		}
	}
	waitQueued(t, &g, n-1)
	cancel()
	close(hook.release)
	wg.Wait()

	for i := 0; i < n-1; i++ {
		if errs[i] != nil || got[i] != int64(i+1) {
			t.Errorf("call %d: %d %v, want %d", i, got[i], errs[i], i+1)
		}
	}
	if !errors.Is(errs[n-1], context.Canceled) {
		t.Errorf("a call cancelled before its batch left: %d %v", got[n-1], errs[n-1])
	}
	if v, err := rdb.Exists(ctx, fmt.Sprint("k", n-1)).Result(); err != nil || v != 0 {
		t.Errorf("the cancelled call ran: %d %v", v, err)
	}
	// Counted: the first call's batch and the 18's (their second sending
	// is the same batch's).
	if batches, scripts := g.batches.Load(), g.scripts.Load(); batches != 2 || scripts != n-1 {
		t.Errorf("counted %d batches of %d scripts, want 2 of %d", batches, scripts, n-1)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	// The first call alone; the 18 queued meanwhile in one pipeline (the
	// cancelled one left out), and again in one once the script, flushed
	// meanwhile, is loaded.
	var sizes []int
	for _, ns := range hook.sent {
		sizes = append(sizes, len(ns))
	}
	if !reflect.DeepEqual(sizes, []int{1, n - 2, n - 2}) {
		t.Errorf("pipelines sent: %v, want 1, %d, %d", sizes, n-2, n-2)
	}
}

// A read rides with the scripts queued before it, in their pipeline (one
// chunk: they are small), and
// sees what they wrote; batches count only scripts; a read whose context
// ended before its batch left is not sent.
func TestGroupCommitReadsRide(t *testing.T) {
	rdb, incr := incrScript(t)
	ctx := context.Background()
	hook := &pipelines{release: make(chan struct{})}
	rdb.AddHook(hook)
	var g groupCommit
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); g.run(ctx, rdb, incr, []string{"a"}, 1) }() // leads, held in flight
	hook.waitSent()
	go func() { defer wg.Done(); g.run(ctx, rdb, incr, []string{"a"}, 5) }()
	waitQueued(t, &g, 1)
	var got *redis.StringCmd
	var readErr error
	go func() {
		defer wg.Done()
		readErr = g.read(ctx, rdb, func(p redis.Pipeliner) { got = p.Get(ctx, "a") })
	}()
	waitQueued(t, &g, 2)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var notSent error
	go func() {
		defer wg.Done()
		notSent = g.read(cancelled, rdb, func(p redis.Pipeliner) { t.Error("a cancelled read was queued") })
	}()
	waitQueued(t, &g, 3)
	close(hook.release)
	wg.Wait()

	if readErr != nil || got.Val() != "6" {
		t.Errorf("the read: %q %v %v, want 6 (the scripts before it applied)", got.Val(), got.Err(), readErr)
	}
	if !errors.Is(notSent, context.Canceled) {
		t.Errorf("a read cancelled before its batch left: %v", notSent)
	}
	if batches, scripts := g.batches.Load(), g.scripts.Load(); batches != 2 || scripts != 2 {
		t.Errorf("counted %d batches of %d scripts, want 2 of 2", batches, scripts)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if want := [][]string{{"evalsha"}, {"evalsha", "get"}}; !reflect.DeepEqual(hook.sent, want) {
		t.Errorf("pipelines sent: %v, want %v", hook.sent, want)
	}
}

// A batch larger than a chunk leaves in several pipelines at once, none
// over chunkBytes, counted as one batch; every caller gets its own answer.
func TestGroupCommitChunks(t *testing.T) {
	rdb := redistest.Start(t).Client()
	ctx := context.Background()
	echo := redis.NewScript(`redis.call('SET', KEYS[1], ARGV[2]) return tonumber(ARGV[1]) + #ARGV[2]`)
	if err := echo.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	hook := &pipelines{release: make(chan struct{})}
	rdb.AddHook(hook)
	var g groupCommit
	big := strings.Repeat("x", 2000)
	const n = 21
	per := callSize([]string{"k0"}, []any{0, big})
	fit := chunkBytes / per // calls to a chunk
	var wg sync.WaitGroup
	got := make([]int64, n)
	errs := make([]error, n)
	call := func(i int) {
		defer wg.Done()
		got[i], errs[i] = g.run(ctx, rdb, echo, []string{fmt.Sprint("k", i)}, i, big).Int64()
	}
	wg.Add(n)
	go call(0) // leads, held in flight
	hook.waitSent()
	for i := 1; i < n; i++ {
		go call(i)
	}
	waitQueued(t, &g, n-1)
	close(hook.release)
	wg.Wait()

	for i := range n {
		if errs[i] != nil || got[i] != int64(i+len(big)) {
			t.Errorf("call %d: %d %v, want %d", i, got[i], errs[i], i+len(big))
		}
	}
	if batches, scripts := g.batches.Load(), g.scripts.Load(); batches != 2 || scripts != n {
		t.Errorf("counted %d batches of %d scripts, want 2 of %d", batches, scripts, n)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	var sizes []int
	for _, ns := range hook.sent[1:] {
		sizes = append(sizes, len(ns))
	}
	slices.Sort(sizes)
	want := []int{(n - 1) % fit}
	for range (n - 1) / fit {
		want = append(want, fit)
	}
	if want[0] == 0 {
		want = want[1:]
	}
	if fit < 2 || len(want) < 2 || !reflect.DeepEqual(sizes, want) {
		t.Errorf("the %d calls queued behind the first left in pipelines of %v, want %v (%d to a chunk)", n-1, sizes, want, fit)
	}
}

// incrScript starts a Redis and loads a script that adds ARGV[1] to KEYS[1].
func incrScript(t *testing.T) (*redis.Client, *redis.Script) {
	rdb := redistest.Start(t).Client()
	incr := redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)
	if err := incr.Load(context.Background(), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	return rdb, incr
}

// waitQueued waits until want calls are queued behind the batch in flight.
func waitQueued(t *testing.T, g *groupCommit, want int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		q := len(g.queue)
		g.mu.Unlock()
		if q == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", q, want)
		}
	}
}
