package hq_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/chainsim"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/wire"
)

// BenchmarkChainReplay: a chain's stores, their journals full of a day,
// replay at once (jittered over 2 s, unthrottled) to 1, 2 and 4
// posedge-hq on PostgreSQL over a 3-node cluster with stream_replicas 3.
// Each op is the whole replay. Printed as "figure <name> <value>" lines:
// rows/s at HQ, seconds until the last row landed, and the consumer's
// greatest lag. Size with POSEDGE_CHAIN_STORES (default 20) and
// POSEDGE_CHAIN_TXNS (transactions per store, default 500); make
// bench-hq runs the 1,000 × 5,000.
func BenchmarkChainReplay(b *testing.B) {
	stores := envInt(b, "POSEDGE_CHAIN_STORES", 20)
	txns := envInt(b, "POSEDGE_CHAIN_TXNS", 500)
	for _, processes := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("hq=%d", processes), func(b *testing.B) {
			for range b.N {
				benchChain(b, stores, txns, processes)
			}
		})
	}
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

func benchChain(b *testing.B, stores, txns, processes int) {
	b.StopTimer()
	ctx := context.Background()
	c := startChainHQ(b, processes)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	built := time.Now()
	chain, err := chainsim.Build(ctx, chainsim.Options{Stores: stores, Txns: txns, Dir: b.TempDir(), Log: log})
	if err != nil {
		b.Fatal(err)
	}
	defer chain.Close()
	b.Logf("%d journals of %d transactions built in %v", stores, txns, time.Since(built).Round(time.Millisecond))
	total := int64(chain.Txns())

	lag := newLagSampler(b, c.NATS.URL())
	b.StartTimer()
	start := time.Now()
	stop, err := chain.Replay(ctx, chainsim.ReplayOptions{NATSURL: c.NATS.URL(), StartJitter: 2 * time.Second, BatchSize: 500})
	if err != nil {
		b.Fatal(err)
	}
	testenv.WaitFor(b, 2*time.Hour, "the whole chain stored at HQ", func() bool { return c.stored() >= total })
	took := time.Since(start)
	b.StopTimer()
	if err := stop(); err != nil {
		b.Errorf("replay: %v", err)
	}
	maxLag := lag.stop()
	if n := c.stored(); n != total {
		b.Fatalf("HQ holds %d, want %d", n, total)
	}
	name := fmt.Sprintf("chain_%dx%d_hq%d", stores, txns, processes)
	fmt.Printf("figure %s_rows_per_s %.0f\n", name, float64(total)/took.Seconds())
	fmt.Printf("figure %s_land_s %.1f\n", name, took.Seconds())
	fmt.Printf("figure %s_max_consumer_lag %d\n", name, maxLag)
	b.ReportMetric(float64(total)/took.Seconds(), "rows/s")
	b.ReportMetric(float64(maxLag), "max_lag")
}

// lagSampler reads the consumer's lag (messages in the stream not yet
// acked by posedge-hq) every second and logs it every ten.
type lagSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	max  uint64
}

func newLagSampler(b *testing.B, url string) *lagSampler {
	l := &lagSampler{done: make(chan struct{})}
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	start := time.Now()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer nc.Close()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for i := 0; ; i++ {
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
			if i%10 == 0 {
				b.Logf("%v: consumer lag %d", time.Since(start).Round(time.Second), lag)
			}
		}
	}()
	return l
}

func (l *lagSampler) stop() uint64 {
	close(l.done)
	l.wg.Wait()
	return l.max
}
