package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/wire"
)

// binDir holds posedge, posedge-hq and posedge-sim, built once.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "posedge-bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	err = testenv.BuildBinaries(dir)
	if err == nil {
		err = buildSim(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildSim(dir string) error {
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("find module root: %w", err)
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "posedge-sim"), "./cmd/posedge-sim")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build posedge-sim: %v\n%s", err, out)
	}
	return nil
}

// sizes are how much work each measurement does.
type sizes struct {
	Reps         int           // repetitions of every measurement; the median is reported
	Lookups      int           // per repetition and side, at concurrency
	PacedLookups int           // per repetition, at 1000/s
	Sales        int           // per repetition and side, at concurrency; also the replay backlog
	PacedSales   int           // per repetition, at 100/s
	RTLookups    int           // sequential lookups whose Redis traffic is counted
	RTSales      int           // sequential sales whose Redis traffic is counted
	SimDuration  time.Duration // the simulator's load
	SimRate      float64       // sales per second per terminal in the simulator
	// SimMix is the fraction of sales keyed by a payment token, refunded,
	// and sent again on purpose; the smoke's is high so that each kind
	// surely happens in its few sales.
	SimMix [3]float64
}

// fullSizes is `make bench` (POSEDGE_BENCH=full): a few minutes.
var fullSizes = sizes{Reps: 3, Lookups: 8000, PacedLookups: 3000, Sales: 4000, PacedSales: 300,
	RTLookups: 500, RTSales: 200, SimDuration: 10 * time.Second, SimRate: 4,
	SimMix: [3]float64{0.3, 0.1, 0.05}}

// smokeSizes is the run of `make test`: every figure printed, in seconds;
// its values mean nothing.
var smokeSizes = sizes{Reps: 3, Lookups: 100, PacedLookups: 100, Sales: 30, PacedSales: 10,
	RTLookups: 20, RTSales: 10, SimDuration: time.Second, SimRate: 2,
	SimMix: [3]float64{0.5, 0.3, 0.3}}

// requiredFigures are the `figure` lines every run prints (issue 14).
var requiredFigures = []string{
	"limiter_vs_raw_evalsha", "limiter_p99_ms", "sales_vs_raw_sqlite_commit", "sale_p99_ms",
	"replay_vs_raw_jetstream", "hq_ingest_vs_raw_sqlite", "hq_ingest_vs_raw_postgres",
	"rss_idle_mb", "rss_load_mb", "redis_round_trips_per_lookup", "redis_round_trips_per_sale",
	"restart_to_first_sale_ms", "failover_no_sale_ms",
}

// terminals in the store: the simulator runs them all.
const terminals = 50

// looseLimits lifts every limit to the most the configuration accepts:
// the figures measure the work of a request, not the limiter saying no.
const looseLimits = `  store: {limit: 100000, window: "1s"}
  terminal: {limit: 100000, window: "1s"}
  actions:
    scan: {limit: 100000, window: "1s"}
    pay: {limit: 100000, window: "1s"}
    refund: {limit: 100000, window: "1s"}
    sync: {limit: 100000, window: "1s"}
  fallback_fraction: 0.5
  terminal_bytes: {limit: 1073741824, window: "1h"}
`

// figure is one line of the table.
type figure struct {
	Name   string
	Value  float64
	Goal   string
	Detail string // repetitions, the raw side, units
}

// harness is one run: a whole store, a PostgreSQL cluster, the clients
// of the raw baselines, and the figures measured so far.
type harness struct {
	t       *testing.T
	sz      sizes
	store   *testenv.Store
	pg      *testenv.Postgres
	http    *http.Client
	raw     *redis.Client // Sentinel-aware, to the store's master
	js      jetstream.JetStream
	nc      *nats.Conn
	figs    []figure
	notes   []string
	sales   int // sales the harness made (answered 201)
	keySeq  int
	rssPeak float64
	grPeak  float64
	stopRSS func()
}

func (h *harness) add(f figure) { h.figs = append(h.figs, f) }

func (h *harness) notef(format string, args ...any) {
	h.notes = append(h.notes, fmt.Sprintf(format, args...))
}

// TestFigures is the harness. Under `make bench` (POSEDGE_BENCH=full)
// it measures every figure at full size; otherwise it runs at smoke size
// so that `make test` proves every figure is still measured and printed.
// It asserts the lines, never the values.
func TestFigures(t *testing.T) {
	sz, mode := smokeSizes, "smoke"
	if os.Getenv("POSEDGE_BENCH") == "full" {
		sz, mode = fullSizes, "full"
	}
	h := setup(t, sz)
	started := time.Now()
	h.measureIdle()
	h.startRSSSampler()
	h.measureRoundTrips()
	h.measureLookups()
	h.measureSalesAndReplay()
	h.measureIngest()
	h.measureSimLoad()
	h.stopRSS()
	h.add(figure{Name: "rss_load_mb", Value: h.rssPeak / 1e6, Goal: "< 100",
		Detail: "peak process_resident_memory_bytes of posedge sampled every 100 ms through every load phase"})
	h.add(figure{Name: "goroutines_load", Value: h.grPeak, Detail: "peak go_goroutines of posedge under load"})
	// Last: they kill posedge and the Redis master.
	h.measureRestart()
	h.measureFailover()

	var out bytes.Buffer
	h.report(&out, mode, time.Since(started))
	os.Stdout.Write(out.Bytes())
	if p := os.Getenv("POSEDGE_BENCH_OUT"); p != "" {
		if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
			t.Errorf("write %s: %v", p, err)
		}
	}
	for _, p := range figureProblems(out.Bytes()) {
		t.Error(p)
	}
}

// figureLine is what scripts read: `figure <name> <value>`.
var figureLine = regexp.MustCompile(`^figure ([a-z0-9_]+) (\S+)$`)

// figureProblems lists what is wrong with the figure lines of out: a
// required figure not printed exactly once, a value that is not a finite
// number.
func figureProblems(out []byte) []string {
	var problems []string
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := figureLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			problems = append(problems, fmt.Sprintf("figure %s = %q: not a finite number", m[1], m[2]))
		}
		seen[m[1]]++
	}
	for _, name := range requiredFigures {
		if seen[name] != 1 {
			problems = append(problems, fmt.Sprintf("figure %s printed %d times, want once", name, seen[name]))
		}
	}
	return problems
}

func setup(t *testing.T, sz sizes) *harness {
	h := &harness{t: t, sz: sz, http: newHTTPClient()}
	h.pg = testenv.StartPostgres(t)
	h.store = testenv.StartStore(t, testenv.StoreOptions{Bin: binDir, Terminals: terminals, Limits: looseLimits, NoHQ: true})
	t.Cleanup(h.http.CloseIdleConnections)
	h.raw = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: testenv.MasterName,
		SentinelAddrs: h.store.Redis.SentinelAddrs(), PoolSize: concurrency})
	t.Cleanup(func() { h.raw.Close() })
	h.connectNATS()
	// posedge-hq creates the stream when it starts; it starts only for the
	// ingest figures, and the edge needs the stream before.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := h.js.CreateStream(ctx, jetstream.StreamConfig{Name: wire.DefaultStream,
		Subjects: []string{wire.DefaultSubjectPrefix + ".>"}, Storage: jetstream.FileStorage,
		Duplicates: 2 * time.Minute}); err != nil {
		t.Fatalf("create stream %s: %v", wire.DefaultStream, err)
	}
	h.store.PutItem("BENCH1", 199, 1000)
	h.store.PutItem("BENCH2", 199, 1<<40)
	return h
}

// connectNATS (re)connects the harness's own client (raw publishes and
// stream administration) after the server was restarted.
func (h *harness) connectNATS() {
	if h.nc != nil {
		h.nc.Close()
	}
	nc, err := nats.Connect(h.store.NATS.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		h.t.Fatalf("connect NATS: %v", err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		h.t.Fatalf("jetstream: %v", err)
	}
	h.nc, h.js = nc, js
	h.t.Cleanup(nc.Close)
}

func (h *harness) metrics() map[string]float64 {
	m, err := scrapeMetrics(h.http, h.store.AdminURL+"/metrics")
	if err != nil {
		h.t.Fatalf("posedge metrics: %v", err)
	}
	return m
}

// measureIdle reads the daemon's footprint once it has settled, before
// any load.
func (h *harness) measureIdle() {
	time.Sleep(2 * time.Second)
	m := h.metrics()
	h.add(figure{Name: "rss_idle_mb", Value: m["process_resident_memory_bytes"] / 1e6, Goal: "< 30",
		Detail: fmt.Sprintf("posedge's process_resident_memory_bytes, %d terminals configured, before any request", terminals)})
	h.add(figure{Name: "goroutines_idle", Value: m["go_goroutines"], Detail: "posedge's go_goroutines before any request"})
	if fi, err := os.Stat(filepath.Join(binDir, "posedge")); err == nil {
		h.add(figure{Name: "binary_mb", Value: float64(fi.Size()) / 1e6,
			Detail: fmt.Sprintf("posedge as `go build` makes it (not stripped), %s/%s", runtime.GOOS, runtime.GOARCH)})
	}
}

// startRSSSampler records the daemon's peak RSS and goroutines from now
// on.
func (h *harness) startRSSSampler() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			m, err := scrapeMetrics(h.http, h.store.AdminURL+"/metrics")
			if err != nil {
				continue
			}
			h.rssPeak = max(h.rssPeak, m["process_resident_memory_bytes"])
			h.grPeak = max(h.grPeak, m["go_goroutines"])
		}
	}()
	h.stopRSS = func() { close(stop); <-done }
	h.t.Cleanup(func() {
		select {
		case <-done:
		default:
			h.stopRSS()
		}
	})
}

// report prints the table, the notes, then one `figure` line per figure.
func (h *harness) report(w io.Writer, mode string, took time.Duration) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "\nposedge bench (%s): %d repetitions, medians; %s/%s, %d CPUs, host %s, %s, took %s\n\n",
		mode, h.sz.Reps, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), host,
		time.Now().UTC().Format(time.RFC3339), took.Round(time.Second))
	fmt.Fprintf(w, "| %-30s | %10s | %-8s | %s\n", "figure", "measured", "goal", "detail")
	fmt.Fprintf(w, "| %-30s | %10s | %-8s | %s\n", strings.Repeat("-", 30), strings.Repeat("-", 10), "--------", "------")
	for _, f := range h.figs {
		fmt.Fprintf(w, "| %-30s | %10.3f | %-8s | %s\n", f.Name, f.Value, f.Goal, f.Detail)
	}
	if len(h.notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range h.notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
	fmt.Fprintln(w)
	for _, f := range h.figs {
		fmt.Fprintf(w, "figure %s %s\n", f.Name, strconv.FormatFloat(f.Value, 'f', 3, 64))
	}
}
