package api

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/posedge/posedge/edge/ratelimit"
	"github.com/posedge/posedge/internal/testenv/load"
	"github.com/posedge/posedge/lua"
)

const benchConcurrency = 32

// runConcurrent runs n calls of op over benchConcurrency goroutines
// (internal/testenv/load) and returns the elapsed time and each call's
// latency.
func runConcurrent(b *testing.B, n int, op func(i int) error) (time.Duration, []time.Duration) {
	d, lat, err := load.Run(n, benchConcurrency, op)
	if err != nil {
		b.Fatal(err)
	}
	return d, lat
}

func looseLimits() *ratelimit.Config {
	big := ratelimit.Policy{Limit: ratelimit.MaxLimit, Window: time.Second}
	return &ratelimit.Config{StoreID: "S1", Store: big, Terminal: big,
		Actions:          map[string]ratelimit.Policy{"scan": big, "pay": big, "refund": big, "sync": big},
		FallbackFraction: 0.5, RedisTimeout: time.Second}
}

// BenchmarkItemLookupVsRawLimiter compares, at the same concurrency, the
// limiter's decision script alone (go-redis EVALSHA, the floor of any
// request) with a whole GET /v1/items/{barcode} through the terminal API
// (auth, limiter, lookup, JSON over HTTP). Goal: lookup/raw ≥ 0.6.
func BenchmarkItemLookupVsRawLimiter(b *testing.B) {
	b.StopTimer() // the store is set up outside the timed region
	e := newEnv(b, envOpts{limits: looseLimits()})
	e.putItem("BENCH1", 199, 1000)
	ctx := context.Background()
	script := lua.MustScript("ratelimit.lua")
	if err := script.Load(ctx, e.rdb).Err(); err != nil {
		b.Fatal(err)
	}
	big := looseLimits().Store
	raw := func(i int) error {
		keys := []string{"pe:{S1}:promo", "pe:{S1}:rl:s", "pe:{S1}:rl:t:T01", "pe:{S1}:rl:a:T01:scan"}
		return script.EvalSha(ctx, e.rdb, keys, fmt.Sprintf("raw.%d", i),
			big.Limit, big.Window.Milliseconds(), "", big.Limit, big.Window.Milliseconds(), "",
			big.Limit, big.Window.Milliseconds(), "scan").Err()
	}
	lookup := func(i int) error {
		r := e.T("T01", "GET", "/v1/items/BENCH1", nil, nil)
		if r.status != 200 {
			return fmt.Errorf("lookup: %d %s", r.status, r.body)
		}
		return nil
	}
	b.StopTimer()
	rawDur, _ := runConcurrent(b, b.N, raw)
	b.StartTimer()
	dur, lat := runConcurrent(b, b.N, lookup)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/rawDur.Seconds(), "raw-ops/s")
	b.ReportMetric(float64(b.N)/dur.Seconds(), "lookup-ops/s")
	b.ReportMetric(rawDur.Seconds()/dur.Seconds(), "lookup/raw")
	b.ReportMetric(float64(load.Percentile(lat, 0.5).Microseconds()), "p50-µs")
	b.ReportMetric(float64(load.Percentile(lat, 0.99).Microseconds()), "p99-µs")
}

// BenchmarkDurableSalesVsRawCommits compares durable sales per second
// (limiter, txn.lua with WAIT for a replica of a Sentinel topology, and a
// journal commit with synchronous=FULL before each answer) with raw
// single-row SQLite commits per second (synchronous=FULL, WAL) on the same
// disk. Group commit lets concurrent sales share fsyncs; goal ≥ 1.0.
func BenchmarkDurableSalesVsRawCommits(b *testing.B) {
	b.StopTimer() // the store is set up outside the timed region
	e := newEnv(b, envOpts{limits: looseLimits(), sentinel: true})
	e.putItem("BENCH2", 199, 1<<40)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "raw.db")+
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"flow_no":"1000000000000001","store_id":"S1","terminal_id":"T01","kind":"sale","total_cents":199}`)
	var run atomic.Int64
	prefix := fmt.Sprintf("bench-%d-", time.Now().UnixNano())
	b.StopTimer()
	rawStart := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := db.Exec(`INSERT INTO t (body) VALUES (?)`, body); err != nil {
			b.Fatal(err)
		}
	}
	rawDur := time.Since(rawStart)
	b.StartTimer()
	dur, lat := runConcurrent(b, b.N, func(i int) error {
		r := e.sale([]string{"T01", "T02"}[i%2], prefix+fmt.Sprint(run.Add(1)), sale1("BENCH2", 1, 199))
		if r.status != 201 {
			return fmt.Errorf("sale: %d %s", r.status, r.body)
		}
		return nil
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/rawDur.Seconds(), "raw-commits/s")
	b.ReportMetric(float64(b.N)/dur.Seconds(), "sales/s")
	b.ReportMetric(rawDur.Seconds()/dur.Seconds(), "sales/raw")
	b.ReportMetric(float64(load.Percentile(lat, 0.99).Microseconds()), "p99-µs")
}
