package ratelimit

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// Exactly N of N+k requests pass within one window, whether they come
// from many goroutines of one daemon or from two daemons (two limiters,
// two connection pools) sharing the store's Redis.
func TestExactlyNPass(t *testing.T) {
	r, rdb := startRedis(t)
	tests := []struct {
		name      string
		daemons   int
		perDaemon int // goroutines
		each      int // requests per goroutine
		terminal  func(g int) string
		action    string
		want      int
	}{
		{"action level, goroutines", 1, 16, 3, func(int) string { return "T01" }, ActionPay, 5},
		{"action level, two daemons", 2, 8, 3, func(int) string { return "T02" }, ActionPay, 5},
		{"terminal level, two daemons", 2, 8, 10, func(int) string { return "T03" }, "", 100},
		{"store level across terminals, two daemons", 2, 12, 100, func(g int) string { return term(100 + g) }, "", 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := rdb.FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			var limiters []*Limiter
			for i := 0; i < tt.daemons; i++ {
				var c redis.UniversalClient = rdb
				if i > 0 {
					c = secondClient(t, r)
				}
				limiters = append(limiters, newTestLimiter(t, c, testConfig(), nil))
			}
			var allowed, fallback atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for d, l := range limiters {
				for g := 0; g < tt.perDaemon; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						for i := 0; i < tt.each; i++ {
							dec, err := l.Allow(context.Background(), tt.terminal(d*tt.perDaemon+g), tt.action)
							if err != nil {
								t.Error(err)
								return
							}
							if dec.Fallback {
								fallback.Add(1)
							}
							if dec.Allowed {
								allowed.Add(1)
							}
						}
					}()
				}
			}
			close(start)
			wg.Wait()
			total := tt.daemons * tt.perDaemon * tt.each
			if fallback.Load() != 0 {
				t.Fatalf("%d decisions fell back; Redis should have answered", fallback.Load())
			}
			if got := allowed.Load(); got != int64(tt.want) {
				t.Fatalf("%d of %d requests allowed, want exactly %d", got, total, tt.want)
			}
		})
	}
}

// A request one level denies is charged at no level.
func TestDeniedChargesNoLevel(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := context.Background()
	const pre = "pe:{S001}:rl:"
	tests := []struct {
		name   string
		cfg    func(*Config)
		fill   [][2]string // allowed requests: terminal, action
		deny   [2]string
		policy string
		counts map[string]int64 // key suffix → ZCARD after the denied request
	}{
		{"pay exhausted", func(*Config) {},
			[][2]string{{"T01", "pay"}, {"T01", "pay"}, {"T01", "pay"}, {"T01", "pay"}, {"T01", "pay"}},
			[2]string{"T01", "pay"}, "pay",
			map[string]int64{"s": 5, "t:T01": 5, "a:T01:pay": 5}},
		{"terminal exhausted", func(c *Config) { c.Terminal = Policy{3, time.Minute} },
			[][2]string{{"T01", ""}, {"T01", ""}, {"T01", "scan"}},
			[2]string{"T01", "refund"}, "terminal",
			map[string]int64{"s": 3, "t:T01": 3, "a:T01:scan": 1, "a:T01:refund": 0}},
		{"store exhausted", func(c *Config) { c.Store = Policy{2, time.Minute} },
			[][2]string{{"T01", ""}, {"T02", "scan"}},
			[2]string{"T03", "pay"}, "store",
			map[string]int64{"s": 2, "t:T01": 1, "t:T02": 1, "a:T02:scan": 1, "t:T03": 0, "a:T03:pay": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			cfg := testConfig()
			tt.cfg(&cfg)
			l := newTestLimiter(t, rdb, cfg, nil)
			for _, f := range tt.fill {
				if d := mustAllow(t, l, f[0], f[1]); !d.Allowed {
					t.Fatalf("fill %v denied: %+v", f, d)
				}
			}
			for i := 0; i < 3; i++ {
				d := mustAllow(t, l, tt.deny[0], tt.deny[1])
				if d.Allowed || d.Policy != tt.policy || d.Remaining != 0 || d.Reset <= 0 || d.Reset > time.Minute {
					t.Fatalf("denied request: %+v, want denied by %s with a reset within the window", d, tt.policy)
				}
			}
			for k, want := range tt.counts {
				if got := zcard(t, rdb, pre+k); got != want {
					t.Errorf("ZCARD %s%s = %d, want %d", pre, k, got, want)
				}
			}
		})
	}
}

// The tightest level is the one with the least remaining; on a tie, the
// one whose slot frees last. Remaining counts down on each allowed hit.
func TestTightestLevel(t *testing.T) {
	_, rdb := startRedis(t)
	cfg := testConfig()
	cfg.Terminal = Policy{6, 30 * time.Second}
	cfg.Actions[ActionPay] = Policy{3, 10 * time.Second}
	l := newTestLimiter(t, rdb, cfg, nil)
	want := []struct {
		allowed   bool
		policy    string
		limit     int
		remaining int
	}{
		{true, "pay", 3, 2},      // pay 2 left, terminal 5
		{true, "pay", 3, 1},      // pay 1, terminal 4
		{true, "pay", 3, 0},      // pay 0, terminal 3
		{false, "pay", 3, 0},     // denied by pay
		{true, "terminal", 6, 2}, // no action: terminal 2 left
		{true, "terminal", 6, 1},
		{true, "terminal", 6, 0},
		{false, "terminal", 6, 0}, // pay 0 and terminal 0 tie: terminal's slot frees last
	}
	actions := []string{"pay", "pay", "pay", "pay", "", "", "", "pay"}
	for i, w := range want {
		d := mustAllow(t, l, "T01", actions[i])
		if d.Allowed != w.allowed || d.Policy != w.policy || d.Limit != w.limit || d.Remaining != w.remaining || d.Fallback {
			t.Fatalf("request %d (%q): %+v, want %+v", i, actions[i], d, w)
		}
		if d.Window != cfg.Terminal.Window && d.Window != cfg.Actions[ActionPay].Window {
			t.Fatalf("request %d: window %v", i, d.Window)
		}
		if d.Reset <= 0 || d.Reset > d.Window {
			t.Fatalf("request %d: reset %v outside (0, %v]", i, d.Reset, d.Window)
		}
	}
}

// The window slides: hits leave it one by one, each a window after it was
// made; a fixed window would free all of them at once.
func TestWindowSlides(t *testing.T) {
	_, rdb := startRedis(t)
	const window = 4 * time.Second
	cfg := testConfig()
	cfg.Actions[ActionPay] = Policy{4, window}
	l := newTestLimiter(t, rdb, cfg, nil)
	pay := func() Decision { return mustAllow(t, l, "T01", ActionPay) }

	tA := redisNow(t, rdb)
	for i := 0; i < 2; i++ {
		if d := pay(); !d.Allowed {
			t.Fatalf("batch A %d denied: %+v", i, d)
		}
	}
	testenv.WaitFor(t, 5*time.Second, "half a window of Redis time", func() bool {
		return redisNow(t, rdb).Sub(tA) >= window/2
	})
	tB := redisNow(t, rdb)
	for i := 0; i < 2; i++ {
		if d := pay(); !d.Allowed {
			t.Fatalf("batch B %d denied: %+v", i, d)
		}
	}
	d := pay()
	if d.Allowed || d.Reset > window/2+100*time.Millisecond {
		t.Fatalf("fifth pay in the window: %+v, want denied until batch A leaves (≤ %v)", d, window/2)
	}
	// Batch A's two hits free two slots, and no more: batch B is still in.
	for i := 0; i < 2; i++ {
		testenv.WaitFor(t, 2*window, "a slot of batch A frees", func() bool { return pay().Allowed })
		if now := redisNow(t, rdb); now.Before(tA.Add(window)) {
			t.Fatalf("a slot freed at %v, before batch A left the window at %v", now, tA.Add(window))
		}
	}
	// Held to the hit log Redis keeps, not to how fast this machine is:
	// the oldest hit left must be batch B's, and the next pay is allowed
	// exactly when it has left the window at the Redis time the decision
	// was made (the new hit's score), denied with the time until it does.
	key := "pe:{S001}:rl:a:T01:pay"
	log, err := rdb.ZRangeWithScores(context.Background(), key, 0, 0).Result()
	if err != nil || len(log) != 1 {
		t.Fatalf("ZRANGE %s: %v %v", key, log, err)
	}
	oldest := time.UnixMicro(int64(log[0].Score))
	if oldest.Before(tB) {
		t.Fatalf("oldest hit at %v, before batch B began at %v: batch A is still logged", oldest, tB)
	}
	before := redisNow(t, rdb)
	d = pay()
	after := redisNow(t, rdb)
	if d.Allowed {
		last, err := rdb.ZRevRangeWithScores(context.Background(), key, 0, 0).Result()
		if err != nil || len(last) != 1 {
			t.Fatalf("ZREVRANGE %s: %v %v", key, last, err)
		}
		if at := time.UnixMicro(int64(last[0].Score)); at.Before(oldest.Add(window)) {
			t.Fatalf("a third slot freed at %v while batch B's hit of %v was in the window: %+v", at, oldest, d)
		}
	} else if leaves := oldest.Add(window); d.Reset < 0 || d.Reset > leaves.Sub(before)+time.Millisecond || d.Reset < leaves.Sub(after)-time.Millisecond {
		t.Fatalf("denied with reset %v, want the time until batch B's hit leaves (%v..%v)", d.Reset, leaves.Sub(after), leaves.Sub(before))
	}
	if n := zcard(t, rdb, "pe:{S001}:rl:a:T01:pay"); n > 4 {
		t.Fatalf("pay key holds %d hits, more than its limit", n)
	}
}

// Every key carries the store's hash tag and a TTL of its window.
func TestKeysAndTTL(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := context.Background()
	l := newTestLimiter(t, rdb, testConfig(), nil)
	mustAllow(t, l, "T-01_a", ActionRefund)
	if _, err := l.AllowStoreSync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.SetPromo(ctx, Promo{Coefficient: 1.5, TTLSeconds: 600, SetBy: "test"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		"pe:{S001}:rl:s":               time.Minute,
		"pe:{S001}:rl:t:T-01_a":        time.Minute,
		"pe:{S001}:rl:a:T-01_a:refund": time.Minute,
		"pe:{S001}:rl:sync":            time.Minute,
		"pe:{S001}:promo":              600 * time.Second,
	}
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != len(want) {
		t.Fatalf("keys %v, want %d keys", keys, len(want))
	}
	for _, k := range keys {
		max, ok := want[k]
		if !ok {
			t.Fatalf("unexpected key %s", k)
		}
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil || ttl <= 0 || ttl > max {
			t.Errorf("PTTL %s = %v (%v), want in (0, %v]", k, ttl, err, max)
		}
	}
}

// Invalid terminal ids and actions are refused before anything reaches
// Redis: no ':', '{' or '}' can ever become part of a key.
func TestInvalidInputNeverReachesRedis(t *testing.T) {
	_, rdb := startRedis(t)
	l := newTestLimiter(t, rdb, testConfig(), nil)
	var calls atomic.Int64
	rdb.AddHook(countHook{&calls})
	tests := []struct {
		terminal, action string
		want             error
	}{
		{"", "", ErrInvalidTerminalID},
		{"T:01", "", ErrInvalidTerminalID},
		{"{S002}", "pay", ErrInvalidTerminalID},
		{"T}", "", ErrInvalidTerminalID},
		{"T 01", "", ErrInvalidTerminalID},
		{"T01\n", "", ErrInvalidTerminalID},
		{"Tö", "", ErrInvalidTerminalID},
		{strings.Repeat("T", 33), "", ErrInvalidTerminalID},
		{"T01", "Pay", ErrUnknownAction},
		{"T01", "pay:x", ErrUnknownAction},
		{"T01", "sale", ErrUnknownAction},
		{"T01", " ", ErrUnknownAction},
	}
	for _, tt := range tests {
		d, err := l.Allow(context.Background(), tt.terminal, tt.action)
		if !errors.Is(err, tt.want) || d.Allowed {
			t.Errorf("Allow(%q, %q) = %+v, %v; want %v", tt.terminal, tt.action, d, err, tt.want)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d Redis commands for invalid input, want 0", n)
	}
	if d := mustAllow(t, l, strings.Repeat("T", 32), ActionScan); !d.Allowed || calls.Load() == 0 {
		t.Fatalf("a valid 32-character id: %+v after %d commands", d, calls.Load())
	}
}

type countHook struct{ n *atomic.Int64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// The HQ replay's store-wide sync key is shared by every daemon of the
// store and separate from the terminals' sync keys and other levels.
func TestStoreSyncKeySeparate(t *testing.T) {
	r, rdb := startRedis(t)
	ctx := context.Background()
	cfg := testConfig()
	cfg.Actions[ActionSync] = Policy{3, time.Minute}
	l1 := newTestLimiter(t, rdb, cfg, nil)
	l2 := newTestLimiter(t, secondClient(t, r), cfg, nil)
	for i, l := range []*Limiter{l1, l1, l2, l2, l1} {
		d, err := l.AllowStoreSync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := i < 3; d.Allowed != want || d.Policy != "sync" || d.Limit != 3 {
			t.Fatalf("store sync %d: %+v, want allowed=%v", i, d, want)
		}
	}
	for i := 0; i < 3; i++ {
		if d := mustAllow(t, l2, "T01", ActionSync); !d.Allowed {
			t.Fatalf("terminal sync %d denied after the store's budget ran out: %+v", i, d)
		}
	}
	if d := mustAllow(t, l1, "T01", ActionSync); d.Allowed || d.Policy != "sync" {
		t.Fatalf("fourth terminal sync: %+v, want denied by its own budget", d)
	}
	for k, want := range map[string]int64{"pe:{S001}:rl:sync": 3, "pe:{S001}:rl:a:T01:sync": 3, "pe:{S001}:rl:s": 3, "pe:{S001}:rl:t:T01": 3} {
		if got := zcard(t, rdb, k); got != want {
			t.Errorf("ZCARD %s = %d, want %d", k, got, want)
		}
	}
}

func TestWaitStoreSync(t *testing.T) {
	_, rdb := startRedis(t)
	cfg := testConfig()
	cfg.Actions[ActionSync] = Policy{1, 2 * time.Second}
	l := newTestLimiter(t, rdb, cfg, nil)
	if d, err := l.AllowStoreSync(context.Background()); err != nil || !d.Allowed {
		t.Fatalf("first store sync: %+v %v", d, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.WaitStoreSync(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitStoreSync with a budget spent and a short ctx: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	if err := l.WaitStoreSync(ctx2); err != nil {
		t.Fatalf("WaitStoreSync: %v", err)
	}
	if n := zcard(t, rdb, "pe:{S001}:rl:sync"); n != 1 {
		t.Fatalf("store sync key holds %d hits, want 1", n)
	}
}
