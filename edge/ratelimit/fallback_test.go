package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/internal/testenv/fakeclock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// When Redis stops answering (frozen: requests time out; killed:
// connections are refused) the local limiter decides at the fallback
// fraction of the unscaled limits; after Redis answers again it keeps
// deciding for one longest window before Redis decides again.
func TestFallback(t *testing.T) {
	tests := []struct {
		name           string
		fault, recover func(r *testenv.Redis)
	}{
		{"frozen (SIGSTOP)", (*testenv.Redis).StopAll, (*testenv.Redis).ContAll},
		{"killed", func(r *testenv.Redis) { r.KillNode(0) }, func(r *testenv.Redis) { r.RestartNode(0) }},
	}
	clients := []struct {
		name string
		new  func(t *testing.T, r *testenv.Redis) *redis.Client
	}{
		// go-redis ignores context deadlines: the limiter stops waiting.
		{"default client", func(t *testing.T, r *testenv.Redis) *redis.Client { return r.NodeClient(0) }},
		// the client itself gives up at the deadline.
		{"ContextTimeoutEnabled client", func(t *testing.T, r *testenv.Redis) *redis.Client {
			c := redis.NewClient(&redis.Options{Addr: r.NodeAddr(0), ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { c.Close() })
			return c
		}},
	}
	for _, tt := range tests {
		for _, cl := range clients {
			t.Run(tt.name+", "+cl.name, func(t *testing.T) {
				r := testenv.StartRedisSingle(t)
				testFallback(t, r, cl.new(t, r), tt.fault, tt.recover)
			})
		}
	}
}

func testFallback(t *testing.T, r *testenv.Redis, rdb *redis.Client, fault, recover func(*testenv.Redis)) {
	clk := fakeclock.New()
	cfg := testConfig()
	cfg.Actions[ActionPay] = Policy{4, 10 * time.Second}
	cfg.Actions[ActionSync] = Policy{50, 90 * time.Second} // the longest window: the hold
	cfg.RedisTimeout = time.Second
	cfg.Now = clk.Now
	reg := prometheus.NewRegistry()
	l := newTestLimiter(t, rdb, cfg, reg)
	gauge := func() float64 { return metricValue(t, reg, "posedge_ratelimit_fallback_active", nil) }

	if _, err := l.SetPromo(context.Background(), Promo{Coefficient: 2, SetBy: "test"}); err != nil {
		t.Fatal(err)
	}
	if d := mustAllow(t, l, "T01", ActionPay); !d.Allowed || d.Fallback || d.Limit != 8 || l.FallbackActive() {
		t.Fatalf("with Redis up: %+v, fallback %v", d, l.FallbackActive())
	}
	fault(r)
	// The promotion must not scale the fallback; the local limiter
	// allows floor(4 × 0.5) = 2 pays per 10 s on the injected clock.
	for i, want := range []bool{true, true, false} {
		d := mustAllow(t, l, "T01", ActionPay)
		if d.Allowed != want || !d.Fallback || d.Policy != "pay" || d.Limit != 2 {
			t.Fatalf("pay %d with Redis down: %+v, want allowed=%v by the local limiter", i, d, want)
		}
	}
	if d := mustAllow(t, l, "T01", ""); !d.Allowed || !d.Fallback || d.Limit != 50 || d.Remaining != 47 {
		t.Fatalf("terminal level on the local limiter: %+v, want 3 of 50 used", d)
	}
	if d, err := l.AllowStoreSync(context.Background()); err != nil || !d.Allowed || !d.Fallback || d.Limit != 25 {
		t.Fatalf("store sync on the local limiter: %+v %v", d, err)
	}
	if !l.FallbackActive() || gauge() != 1 || !l.FallbackHeldUntil().IsZero() {
		t.Fatalf("FallbackActive %v, gauge %v, held until %v while Redis is down",
			l.FallbackActive(), gauge(), l.FallbackHeldUntil())
	}
	clk.Advance(10 * time.Second) // the local pay window slides on the injected clock
	if d := mustAllow(t, l, "T01", ActionPay); !d.Allowed || !d.Fallback {
		t.Fatalf("pay after the local window: %+v", d)
	}

	recover(r)
	var back time.Time
	testenv.WaitFor(t, 20*time.Second, "a probe to see Redis again", func() bool {
		clk.Advance(probeEvery)
		mustAllow(t, l, "T09", ActionScan)
		var ok bool
		back, ok = l.recovered()
		return ok
	})
	// Redis answers, but the store stays on the local limiter for
	// one full window rather than getting a fresh quota.
	if d := mustAllow(t, l, "T01", ActionPay); !d.Fallback || !l.FallbackActive() {
		t.Fatalf("right after Redis returned: %+v, want the local limiter", d)
	}
	if u := l.FallbackHeldUntil(); !u.Equal(back.Add(90 * time.Second)) {
		t.Fatalf("held until %v, want %v (Redis back + the longest window)", u, back.Add(90*time.Second))
	}
	clk.Advance(back.Add(90*time.Second).Sub(clk.Now()) - time.Millisecond)
	if d := mustAllow(t, l, "T02", ""); !d.Fallback {
		t.Fatalf("just before the hold ends: %+v, want the local limiter", d)
	}
	clk.Advance(time.Millisecond)
	if d := mustAllow(t, l, "T02", ""); d.Fallback || l.FallbackActive() || gauge() != 0 {
		t.Fatalf("after the hold: %+v, fallback %v, gauge %v; want Redis deciding", d, l.FallbackActive(), gauge())
	}
	if u := l.FallbackHeldUntil(); !u.IsZero() {
		t.Fatalf("held until %v after the hold; want zero", u)
	}
}

// A caller that gives up is told so; it does not switch to the fallback.
func TestCanceledContextIsNoFallback(t *testing.T) {
	_, rdb := startRedis(t)
	l := newTestLimiter(t, rdb, testConfig(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d, err := l.Allow(ctx, "T01", ActionScan); err == nil || d.Allowed {
		t.Fatalf("Allow with a canceled ctx: %+v, %v", d, err)
	}
	if l.FallbackActive() {
		t.Fatal("a canceled caller switched the store to the fallback")
	}
}
