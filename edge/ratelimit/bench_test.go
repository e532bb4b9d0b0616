package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/internal/testenv/load"
	"github.com/posedge/posedge/lua"
	"github.com/redis/go-redis/v9"
)

// benchConcurrency is the number of concurrent callers of both sides of
// the raw-script / Allow comparison.
const benchConcurrency = 8

// runOps runs n calls of op over benchConcurrency goroutines
// (internal/testenv/load) and returns the elapsed time and every call's
// latency.
func runOps(b *testing.B, n int, op func(i int) error) (time.Duration, []time.Duration) {
	d, lat, err := load.Run(n, benchConcurrency, op)
	if err != nil {
		b.Fatal(err)
	}
	return d, lat
}

// BenchmarkAllowVsRawScript runs, at the same concurrency and on the same
// keys and limits (the contract's), the decision script through go-redis
// EVALSHA directly and then Limiter.Allow. ns/op is Allow's; it reports
// both throughputs, their ratio (allow/raw, goal ≥ 0.6) and Allow's
// p50/p99 latency.
func BenchmarkAllowVsRawScript(b *testing.B) {
	for _, ctxTimeout := range []bool{false, true} {
		name := "client=default"
		if ctxTimeout {
			name = "client=ContextTimeoutEnabled"
		}
		b.Run(name, func(b *testing.B) { benchAllowVsRaw(b, ctxTimeout) })
	}
}

func benchAllowVsRaw(b *testing.B, ctxTimeout bool) {
	r := testenv.StartRedisSingle(b)
	rdb := redis.NewClient(&redis.Options{Addr: r.NodeAddr(0), ContextTimeoutEnabled: ctxTimeout})
	b.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	l := newTestLimiter(b, rdb, Config{StoreID: "S001"}, nil)
	script := lua.MustScript("ratelimit.lua")
	if err := script.Load(ctx, rdb).Err(); err != nil {
		b.Fatal(err)
	}
	terminals := make([]string, 50)
	for i := range terminals {
		terminals[i] = term(i)
	}
	store := l.cfg.Store
	terminal := l.cfg.Terminal
	scan := l.cfg.Actions[ActionScan]
	raw := func(i int) error {
		id := terminals[i%len(terminals)]
		keys := []string{"pe:{S001}:promo", "pe:{S001}:rl:s", "pe:{S001}:rl:t:" + id, "pe:{S001}:rl:a:" + id + ":scan"}
		return script.EvalSha(ctx, rdb, keys, "raw."+term(i),
			store.Limit, store.Window.Milliseconds(), "",
			terminal.Limit, terminal.Window.Milliseconds(), "",
			scan.Limit, scan.Window.Milliseconds(), "scan").Err()
	}
	var fallbacks atomic.Int64
	allow := func(i int) error {
		d, err := l.Allow(ctx, terminals[i%len(terminals)], ActionScan)
		if d.Fallback {
			fallbacks.Add(1)
		}
		return err
	}
	b.StopTimer()
	rawDur, _ := runOps(b, b.N, raw)
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	allowDur, lat := runOps(b, b.N, allow)
	b.StopTimer()
	if fallbacks.Load() > 0 {
		b.Logf("%d of %d decisions fell back (Redis slower than %v)", fallbacks.Load(), b.N, l.cfg.RedisTimeout)
	}
	b.ReportMetric(float64(b.N)/rawDur.Seconds(), "raw-ops/s")
	b.ReportMetric(float64(b.N)/allowDur.Seconds(), "allow-ops/s")
	b.ReportMetric(rawDur.Seconds()/allowDur.Seconds(), "allow/raw")
	b.ReportMetric(float64(load.Percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(load.Percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkDecisionAt1kPerSecond paces Allow at 1000 requests per second
// (the load: 50 terminals scanning) and reports the decision's
// p50/p99 latency (goal p99 ≤ 2 ms on a 2-core machine).
func BenchmarkDecisionAt1kPerSecond(b *testing.B) {
	_, rdb := startRedis(b)
	ctx := context.Background()
	l := newTestLimiter(b, rdb, Config{StoreID: "S001"}, nil)
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			if _, err := l.Allow(ctx, term(i%50), ActionScan); err != nil {
				b.Error(err)
			}
			lat[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(load.Percentile(lat, 0.50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(load.Percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkRedisBytesPerTerminal fills one terminal's keys to the
// contract's limits per iteration and reports their Redis memory.
func BenchmarkRedisBytesPerTerminal(b *testing.B) {
	_, rdb := startRedis(b)
	cfg := Config{StoreID: "S001", Store: Policy{MaxLimit, time.Hour}, Terminal: Policy{100, time.Hour},
		Actions: map[string]Policy{ActionScan: {20, time.Hour}, ActionPay: {5, time.Hour},
			ActionRefund: {3, time.Hour}, ActionSync: {50, time.Hour}}, RedisTimeout: 5 * time.Second}
	l := newTestLimiter(b, rdb, cfg, nil)
	var bytes int64
	for i := 0; b.Loop(); i++ {
		id := term(i)
		fillTerminal(b, l, id)
		bytes, _ = terminalBytes(b, rdb, id)
	}
	b.ReportMetric(float64(bytes), "redis-bytes/terminal")
}
