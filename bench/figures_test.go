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
	"slices"
	"strconv"
	"strings"
	"sync"
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
	if conf := os.Getenv(floorEnv); conf != "" {
		os.Exit(runFloorServer(conf)) // this binary started again as the floor server (floor_test.go)
	}
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
	// FailoverReps is how often the failover is measured: each takes tens
	// of seconds, too long for `make test`'s smoke.
	FailoverReps int
	// Slopes measures each path of sizes_test.go at its large size too
	// and prints the slope; without, only the small size is measured (its
	// `_small` figure), which keeps the code path and its checks alive.
	Slopes bool
	// TraceSales are the sales traced one at a time under MONITOR per
	// repetition; TraceConcurrent traces 4×concurrency more at
	// concurrency (a note). The smoke traces a few, to keep the parsing
	// of MONITOR's record checked.
	TraceSales      int
	TraceConcurrent bool
}

// fullSizes is `make bench` (POSEDGE_BENCH=full): a few minutes.
var fullSizes = sizes{Reps: 3, Lookups: 8000, PacedLookups: 3000, Sales: 4000, PacedSales: 300,
	RTLookups: 500, RTSales: 200, SimDuration: 10 * time.Second, SimRate: 4,
	SimMix: [3]float64{0.3, 0.1, 0.05}, FailoverReps: 3, Slopes: true, TraceSales: 40, TraceConcurrent: true}

// smokeSizes is the run of `make test`: every figure printed, in seconds;
// its values mean nothing. Once each: repetitions, slopes and a long
// trace made it take 465 s where it exists only so that the bench cannot
// rot.
var smokeSizes = sizes{Reps: 1, Lookups: 100, PacedLookups: 100, Sales: 30, PacedSales: 10,
	RTLookups: 20, RTSales: 10, SimDuration: time.Second, SimRate: 2,
	SimMix: [3]float64{0.5, 0.3, 0.3}, FailoverReps: 1, TraceSales: 5}

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
	Value  float64 // the median of Reps (their largest when Max)
	Goal   string
	Detail string // the raw side, units
	// Reps are the repetitions; left empty, they are read from the
	// "reps a b c" the Detail ends with, else Value alone. A figure
	// added again under its name gains the new repetitions.
	Reps []float64
	// Loads are the 1-minute load averages of the machine as the
	// repetitions ended (one, when the figure was added, if left empty).
	Loads []float64
	Max   bool // a peak: Value is the largest repetition, not the median
}

// harness is one run: a whole store, a PostgreSQL cluster, the clients
// of the raw baselines, and the figures measured so far.
type harness struct {
	t        *testing.T
	sz       sizes
	store    *testenv.Store
	pg       *testenv.Postgres
	http     *http.Client
	raw      *redis.Client // Sentinel-aware, to the store's master
	js       jetstream.JetStream
	nc       *nats.Conn
	figs     []figure
	notes    []string
	sales    int // sales the harness made (answered 201)
	keySeq   int
	rssMu    sync.Mutex
	rssPeak  float64 // since the last rssPhase
	grPeak   float64
	rssPeaks []float64 // per load phase
	grPeaks  []float64
	stopRSS  func()
}

// add records f, or its repetitions under a figure of its name added
// before (a phase measured once per call, called Reps times).
func (h *harness) add(f figure) {
	if len(f.Reps) == 0 {
		f.Reps = repsOf(f.Detail, f.Value)
	}
	if len(f.Reps) > 1 { // the table prints them in their own column
		f.Detail = strings.TrimSuffix(strings.TrimSpace(repsTail.ReplaceAllString(f.Detail, "")), ";")
	}
	if len(f.Loads) == 0 {
		f.Loads = []float64{loadAvg()}
	}
	for i := range h.figs {
		g := &h.figs[i]
		if g.Name != f.Name {
			continue
		}
		if f.Detail != g.Detail {
			h.notef("%s, repetition %d: %s", f.Name, len(g.Reps)+1, f.Detail)
		}
		g.Reps, g.Loads = append(g.Reps, f.Reps...), append(g.Loads, f.Loads...)
		g.Value = g.agg()
		return
	}
	h.figs = append(h.figs, f)
}

func (f *figure) agg() float64 {
	if f.Max {
		return slices.Max(f.Reps)
	}
	return median(f.Reps)
}

// repsTail is the "reps 0.49 0.50 0.52" a Detail ends with.
var repsTail = regexp.MustCompile(`reps ((?:-?[0-9.]+ ?)+)$`)

// repsOf reads the repetitions a figure's Detail names, else value alone.
func repsOf(detail string, value float64) []float64 {
	m := repsTail.FindStringSubmatch(detail)
	if m == nil {
		return []float64{value}
	}
	var out []float64
	for _, f := range strings.Fields(m[1]) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return []float64{value}
		}
		out = append(out, v)
	}
	return out
}

// loadAvg is the machine's 1-minute load average (-1 where there is no
// /proc/loadavg).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

func (h *harness) notef(format string, args ...any) {
	h.notes = append(h.notes, fmt.Sprintf(format, args...))
}

// phasesEnv names the phases a run measures, comma-separated (all when
// unset): for working on one figure. Such a run never rewrites the doc
// and is not checked for the required figures.
const phasesEnv = "POSEDGE_BENCH_PHASES"

// cpuProfileEnv names a file for posedge's CPU profile of the run
// (`posedge run --cpuprofile`); posedge is stopped with SIGTERM at the
// end to write it, so use it with phasesEnv that leave out recovery.
const cpuProfileEnv = "POSEDGE_BENCH_CPUPROFILE"

// benchPhases are the names phasesEnv takes, in the order they run.
var benchPhases = []string{"idle", "roundtrips", "lookups", "sales", "ingest", "sim", "recovery", "sizes"}

// parsePhases reads phasesEnv's value: nil for all.
func parsePhases(v string) (map[string]bool, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	out := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(benchPhases, p) {
			return nil, fmt.Errorf("%s: unknown phase %q (phases: %s)", phasesEnv, p, strings.Join(benchPhases, ", "))
		}
		out[p] = true
	}
	return out, nil
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
	run := runInfo{Mode: mode, Reps: sz.Reps, Started: time.Now(), LoadStart: loadAvg(), Commit: gitDescribe()}
	run.ticksStart, run.ticksOK = readMachineTicks()
	phases, err := parsePhases(os.Getenv(phasesEnv))
	if err != nil {
		t.Fatal(err)
	}
	if phases != nil {
		run.Mode += ", phases " + os.Getenv(phasesEnv)
	}
	want := func(name string) bool { return phases == nil || phases[name] }
	// The report is printed (and its file written) even when a phase
	// fails, with what was measured so far; the doc only from a whole run
	// (every phase, every slope) in which no phase failed: a failed
	// phase's subtest returns and the run goes on, so reaching the end
	// is not enough (the 2026-12-05 run rewrote the doc with a failed
	// slope).
	whole := false
	if v := os.Getenv(slopesEnv); v != "" {
		run.Mode += ", slopes " + v
	}
	defer func() { h.finish(run, whole, whole && phases == nil && os.Getenv(slopesEnv) == "") }()
	// A phase that measures its figures once is called Reps times: every
	// figure is printed with its repetitions, their median and the load.
	if want("idle") {
		for range sz.Reps {
			h.measureIdle()
		}
	}
	h.startRSSSampler()
	if want("roundtrips") {
		for range sz.Reps {
			h.measureRoundTrips()
		}
	}
	if want("lookups") {
		h.measureLookups()
		h.measureFloor()
	}
	h.rssPhase()
	if want("sales") {
		h.measureSalesAndReplay()
		h.measureSaleTrace()
	}
	if want("ingest") {
		h.measureIngest()
	}
	h.rssPhase()
	if want("sim") {
		for range sz.Reps {
			h.measureSimLoad()
		}
	}
	h.rssPhase()
	h.stopRSS()
	h.add(figure{Name: "rss_load_mb", Value: slices.Max(h.rssPeaks) / 1e6, Goal: "< 100", Max: true, Reps: scale(h.rssPeaks, 1e-6),
		Detail: "peak resident set (VmRSS) of posedge sampled every 100 ms, the largest of the three load phases (repetitions: lookups; sales, replay and HQ ingest; the simulator)"})
	h.add(figure{Name: "goroutines_load", Value: slices.Max(h.grPeaks), Max: true, Reps: h.grPeaks,
		Detail: "peak go_goroutines of posedge (/metrics once a second) in the same three phases, the largest"})
	if want("recovery") {
		// Then they kill posedge and the Redis master.
		h.measureRestart()
		// Each failover in a subtest: one that never gets back to normal mode
		// is a finding (noted, the rest of the run still measured), not the
		// end of the report.
		for rep := range sz.FailoverReps {
			if !h.phase(t, fmt.Sprintf("failover_%d", rep+1), h.measureFailover) {
				h.notef("FINDING failover repetition %d: posedge not back in normal mode (see the test log); failover_no_sale_ms has the repetitions before it", rep+1)
				break
			}
		}
	}
	if want("sizes") {
		// Last: they grow Redis and the journal past what the others expect.
		if h.phase(t, "ready_for_sizes", func() { h.waitReady(2 * time.Minute) }) {
			h.phase(t, "sizes", h.measureSizes)
		} else {
			h.notef("sizes not measured: posedge not ready after the failovers")
		}
	}

	if p := os.Getenv(cpuProfileEnv); p != "" {
		// posedge writes its profile when it ends on SIGTERM.
		if err := h.store.Edge.Terminate(30 * time.Second); err != nil {
			t.Errorf("stop posedge for its CPU profile %s: %v", p, err)
		}
		h.notef("posedge's CPU profile of the whole run: go tool pprof -top %s", p)
	}
	whole = !t.Failed()
}

// phase runs fn in a subtest of its own (h.t is the subtest's meanwhile)
// and reports whether it passed: a phase that fails is reported, the run
// goes on.
func (h *harness) phase(t *testing.T, name string, fn func()) bool {
	orig := h.t
	defer func() { h.t = orig }()
	return t.Run(name, func(st *testing.T) {
		h.t = st
		fn()
	})
}

// finish prints the report and writes its file; from a whole run in
// which every phase passed (writeDoc) it rewrites the doc's table and
// checks the figure lines.
func (h *harness) finish(run runInfo, passed, writeDoc bool) {
	t := h.t
	run.Took, run.LoadEnd = time.Since(run.Started), loadAvg()
	ticksEnd, ok := readMachineTicks()
	run.Steal = stealShare(run.ticksStart, ticksEnd, run.ticksOK, ok)
	if !passed {
		run.Mode += ", a phase failed: its figures are missing or partial"
	}
	var out bytes.Buffer
	h.report(&out, run)
	os.Stdout.Write(out.Bytes())
	if p := os.Getenv("POSEDGE_BENCH_OUT"); p != "" {
		if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
			t.Errorf("write %s: %v", p, err)
		}
		run.Output = filepath.Base(p)
	}
	if !writeDoc {
		return
	}
	if p := os.Getenv("POSEDGE_BENCH_DOC"); p != "" {
		if err := rewriteDocTable(p, docTable(run, h.figs)); err != nil {
			t.Errorf("rewrite the table of %s: %v", p, err)
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
	var edgeArgs []string
	if p := os.Getenv(cpuProfileEnv); p != "" {
		edgeArgs = []string{"--cpuprofile", p}
	}
	h.store = testenv.StartStore(t, testenv.StoreOptions{Bin: binDir, Terminals: terminals, Limits: looseLimits, NoHQ: true, EdgeArgs: edgeArgs})
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
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			// The resident size is read from /proc (what the daemon's own
			// process_resident_memory_bytes reads): scraping /metrics every
			// 100 ms cost posedge about a tenth of a core of gzip and text
			// encoding, taken from the figures measured meanwhile. The
			// goroutine count needs /metrics: once a second.
			rss := residentBytes(h.store.Edge.Pid())
			var goroutines float64
			if n%10 == 0 {
				if m, err := scrapeMetrics(h.http, h.store.AdminURL+"/metrics"); err == nil {
					goroutines = m["go_goroutines"]
				}
			}
			h.rssMu.Lock()
			h.rssPeak = max(h.rssPeak, rss)
			h.grPeak = max(h.grPeak, goroutines)
			h.rssMu.Unlock()
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

// residentBytes is the resident set of process pid (VmRSS of
// /proc/<pid>/status), 0 when it cannot be read.
func residentBytes(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseFloat(f[0], 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// runInfo is what the table says of the run itself.
type runInfo struct {
	Mode      string
	Reps      int
	Started   time.Time
	Took      time.Duration
	LoadStart float64
	LoadEnd   float64
	// Steal is the share of the machine's CPU time its hypervisor took
	// over the run (stealShare; -1 unknown).
	Steal      float64
	ticksStart machineTicks
	ticksOK    bool
	Commit     string // git describe of the tree measured
	Output     string // the file the whole output went to
}

// stealText is the run's steal share as the report and the doc say it.
func (r runInfo) stealText() string {
	if r.Steal < 0 {
		return ""
	}
	return fmt.Sprintf("; CPU time taken by the hypervisor (steal) %.0f %% of the run", 100*r.Steal)
}

// rssPhase ends a load phase of the RSS sampler: its peaks are kept.
func (h *harness) rssPhase() {
	h.rssMu.Lock()
	defer h.rssMu.Unlock()
	h.rssPeaks, h.grPeaks = append(h.rssPeaks, h.rssPeak), append(h.grPeaks, h.grPeak)
	h.rssPeak, h.grPeak = 0, 0
}

// report prints the table, the notes, then one `figure` line per figure.
func (h *harness) report(w io.Writer, run runInfo) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "\nposedge bench (%s): %d repetitions, medians; %s/%s, %d CPUs, host %s, %s, took %s; load average (1 min) %.2f at start, %.2f at end%s\n\n",
		run.Mode, run.Reps, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), host,
		run.Started.UTC().Format(time.RFC3339), run.Took.Round(time.Second), run.LoadStart, run.LoadEnd, run.stealText())
	fmt.Fprintf(w, "| %-34s | %10s | %-8s | %-26s | %-15s | %s\n", "figure", "median", "goal", "repetitions", "load (1 min)", "detail")
	fmt.Fprintf(w, "| %-34s | %10s | %-8s | %-26s | %-15s | %s\n", strings.Repeat("-", 34), strings.Repeat("-", 10), "--------",
		strings.Repeat("-", 26), strings.Repeat("-", 15), "------")
	for _, f := range h.figs {
		fmt.Fprintf(w, "| %-34s | %10.3f | %-8s | %-26s | %-15s | %s\n", f.Name, f.Value, f.Goal, repString(f.Reps), loadString(f.Loads), f.Detail)
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

// repString prints repetitions with as many digits as their size needs.
func repString(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		switch a := math.Abs(x); {
		case a >= 1000:
			parts[i] = strconv.FormatFloat(x, 'f', 0, 64)
		case a >= 10:
			parts[i] = strconv.FormatFloat(x, 'f', 1, 64)
		default:
			parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
		}
	}
	return strings.Join(parts, " ")
}

func loadString(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strings.Join(parts, " ")
}

func scale(v []float64, by float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * by
	}
	return out
}

// gitDescribe names the tree measured ("" outside a checkout).
func gitDescribe() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
