package hq_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/chainsim"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/wire"
)

// BenchmarkChainReplay: a chain's stores, their journals full of a day,
// replay at once (jittered over 2 s, unthrottled) to 1, 2 and 4
// posedge-hq on PostgreSQL over a 3-node cluster with stream_replicas 3.
// Each op is the whole replay. Printed as "figure <name> <value>" lines:
// rows/s at HQ, seconds until the last row landed, the consumer's
// greatest lag and its lag every POSEDGE_CHAIN_LAG_EVERY (default 10 s).
// Size with POSEDGE_CHAIN_STORES (default 20) and POSEDGE_CHAIN_TXNS
// (transactions per store, default 500); POSEDGE_CHAIN_HQ lists the
// posedge-hq counts (default "1,2,4"), POSEDGE_CHAIN_BATCH is their
// batch_size (default 256); with POSEDGE_CHAIN_CPUPROFILE=DIR the first
// posedge-hq writes a CPU profile of its run to DIR/hq<count>.cpu. make
// bench-hq runs the 1,000 × 5,000. With POSEDGE_CHAIN_DRAIN=1
// the stores first replay everything with posedge-hq stopped (not
// timed), then posedge-hq starts on the full stream and the time to land
// is its own: on a 2-core box the 1,000 replayers and the replicated
// stream otherwise set the pace (docs/performance.md), not HQ.
func BenchmarkChainReplay(b *testing.B) {
	stores := envInt(b, "POSEDGE_CHAIN_STORES", 20)
	txns := envInt(b, "POSEDGE_CHAIN_TXNS", 500)
	batch := envInt(b, "POSEDGE_CHAIN_BATCH", hq.DefaultBatchSize)
	lagEvery := time.Duration(envInt(b, "POSEDGE_CHAIN_LAG_EVERY", 10)) * time.Second
	counts := []int{1, 2, 4}
	if v := os.Getenv("POSEDGE_CHAIN_HQ"); v != "" {
		counts = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("POSEDGE_CHAIN_HQ=%q: want a list of positive numbers", v)
			}
			counts = append(counts, n)
		}
	}
	for _, processes := range counts {
		b.Run(fmt.Sprintf("hq=%d", processes), func(b *testing.B) {
			for range b.N {
				cb := chainBench{stores: stores, txns: txns, processes: processes, batch: batch, lagEvery: lagEvery,
					drain: os.Getenv("POSEDGE_CHAIN_DRAIN") == "1"}
				if dir := os.Getenv("POSEDGE_CHAIN_CPUPROFILE"); dir != "" {
					cb.cpuOut = filepath.Join(dir, fmt.Sprintf("hq%d.cpu", processes))
				}
				benchChain(b, cb)
			}
		})
	}
}

type chainBench struct {
	stores, txns, processes, batch int
	lagEvery                       time.Duration
	cpuOut                         string
	drain                          bool // HQ times a full stream (POSEDGE_CHAIN_DRAIN)
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func benchChain(b *testing.B, cb chainBench) {
	b.StopTimer()
	ctx := context.Background()
	stores, txns, processes := cb.stores, cb.txns, cb.processes
	c := startChainHQWith(b, processes, cb.batch, cb.cpuOut)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	built := time.Now()
	chain, err := chainsim.Build(ctx, chainsim.Options{Stores: stores, Txns: txns, Dir: b.TempDir(), Log: log})
	if err != nil {
		b.Fatal(err)
	}
	defer chain.Close()
	b.Logf("%d journals of %d transactions built in %v", stores, txns, time.Since(built).Round(time.Millisecond))
	total := int64(chain.Txns())

	replay := func() func() error {
		stop, err := chain.Replay(ctx, chainsim.ReplayOptions{NATSURL: c.NATS.URL(), StartJitter: 2 * time.Second, BatchSize: 500})
		if err != nil {
			b.Fatal(err)
		}
		return stop
	}
	var stop func() error
	if cb.drain {
		for i := range c.HQ {
			if err := c.HQ[i].Terminate(30 * time.Second); err != nil {
				b.Fatal(err)
			}
		}
		filled := time.Now()
		stop = replay()
		testenv.WaitFor(b, 4*time.Hour, "the whole chain in the stream", func() bool {
			time.Sleep(time.Second)
			return c.txnMessages() >= total
		})
		b.Logf("%d transactions in the stream after %v (not timed); posedge-hq starts", total, time.Since(filled).Round(time.Millisecond))
	}
	lag := newLagSampler(b, c.NATS.URL(), cb.lagEvery)
	b.StartTimer()
	start := time.Now()
	if cb.drain {
		for i := range c.HQ {
			c.HQ[i].Start(b)
		}
	} else {
		stop = replay()
	}
	testenv.WaitFor(b, 4*time.Hour, "the whole chain stored at HQ", func() bool {
		time.Sleep(250 * time.Millisecond) // a sum over the stores table, not a count of millions of rows
		return c.counted() >= total
	})
	took := time.Since(start)
	b.StopTimer()
	// Why a run was as fast as it was: what every posedge-hq did beside
	// storing rows, and PostgreSQL's deadlocks (each one waited
	// deadlock_timeout before it was found).
	work := map[string]float64{}
	for _, m := range []string{"posedge_hq_ingested_total", "posedge_hq_duplicates_total", "posedge_hq_batch_errors_total",
		"posedge_hq_batch_commit_seconds_sum", "posedge_hq_batch_commit_seconds_count"} {
		work[m] = c.metricSum(m)
	}
	if err := stop(); err != nil {
		b.Errorf("replay: %v", err)
	}
	maxLag, series := lag.stop()
	if cb.cpuOut != "" {
		// SIGTERM: posedge-hq ends its profile on the way out.
		if err := c.HQ[0].Terminate(30 * time.Second); err != nil {
			b.Errorf("profile: %v", err)
		}
	}
	if n := c.stored(); n != total {
		b.Fatalf("HQ holds %d, want %d", n, total)
	}
	name := fmt.Sprintf("chain_%dx%d_hq%d_batch%d", stores, txns, processes, cb.batch)
	if cb.drain {
		name += "_drain"
	}
	fmt.Printf("figure %s_rows_per_s %.0f\n", name, float64(total)/took.Seconds())
	for _, p := range series {
		fmt.Printf("figure %s_lag_at_%ds %d\n", name, int(p.at.Seconds()), p.lag)
	}
	fmt.Printf("figure %s_land_s %.1f\n", name, took.Seconds())
	fmt.Printf("figure %s_max_consumer_lag %d\n", name, maxLag)
	fmt.Printf("figure %s_duplicates %.0f\n", name, work["posedge_hq_duplicates_total"])
	fmt.Printf("figure %s_batch_errors %.0f\n", name, work["posedge_hq_batch_errors_total"])
	if n := work["posedge_hq_batch_commit_seconds_count"]; n > 0 {
		fmt.Printf("figure %s_batches %.0f\n", name, n)
		fmt.Printf("figure %s_mean_batch_rows %.1f\n", name, work["posedge_hq_ingested_total"]/n)
		fmt.Printf("figure %s_mean_commit_ms %.2f\n", name, 1000*work["posedge_hq_batch_commit_seconds_sum"]/n)
	}
	fmt.Printf("figure %s_pg_deadlocks %d\n", name, c.queryCount("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"))
	b.ReportMetric(float64(total)/took.Seconds(), "rows/s")
	b.ReportMetric(float64(maxLag), "max_lag")
}

// lagSampler reads the consumer's lag (messages in the stream not yet
// acked by posedge-hq) every second, keeping the greatest and one
// sample every `every`.
type lagSampler struct {
	done   chan struct{}
	wg     sync.WaitGroup
	max    uint64
	series []lagPoint
}

type lagPoint struct {
	at  time.Duration
	lag uint64
}

func newLagSampler(b *testing.B, url string, every time.Duration) *lagSampler {
	l := &lagSampler{done: make(chan struct{})}
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	start := time.Now()
	next := time.Duration(0)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer nc.Close()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			cons, err := js.Consumer(ctx, wire.DefaultStream, hq.ConsumerName)
			if err != nil {
				cancel()
				continue
			}
			info, err := cons.Info(ctx)
			cancel()
			if err != nil {
				continue
			}
			lag := info.NumPending + uint64(info.NumAckPending)
			l.max = max(l.max, lag)
			if at := time.Since(start); at >= next {
				l.series = append(l.series, lagPoint{at.Round(time.Second), lag})
				b.Logf("%v: consumer lag %d", at.Round(time.Second), lag)
				next += every
			}
		}
	}()
	return l
}

func (l *lagSampler) stop() (uint64, []lagPoint) {
	close(l.done)
	l.wg.Wait()
	return l.max, l.series
}
