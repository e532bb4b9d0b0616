package bench

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/lua"
	"github.com/posedge/posedge/sync/wire"
)

func (h *harness) term(i int) (string, string) {
	id := h.store.Terminals[i%len(h.store.Terminals)]
	return id, h.store.Keys[id]
}

// lookup is GET /v1/items/BENCH1 through the daemon as terminal i.
func (h *harness) lookup(i int) error {
	_, key := h.term(i)
	status, body, err := call(h.http, "GET", h.store.EdgeURL+"/v1/items/BENCH1", key, nil, "")
	if err == nil && status != 200 {
		err = fmt.Errorf("lookup: %d %s", status, body)
	}
	return err
}

var saleBody = []byte(`{"lines":[{"barcode":"BENCH2","qty":1,"price_cents":199}],"total_cents":199,"tender":"cash"}`)

// saleOp returns a durable cash sale through the daemon, one new
// Idempotency-Key per call.
func (h *harness) saleOp() func(i int) error {
	return h.postOp("sale", "/v1/sales", func(int) []byte { return saleBody }, nil)
}

// postOp returns an op that POSTs body(i) to path as terminal i, one new
// Idempotency-Key per call, and wants 201; read, when set, takes each
// answer's body.
func (h *harness) postOp(what, path string, body func(i int) []byte, read func(i int, resp []byte) error) func(i int) error {
	prefix := h.keyPrefix("bench-" + what)
	return func(i int) error {
		_, key := h.term(i)
		status, resp, err := call(h.http, "POST", h.store.EdgeURL+path, key, body(i), prefix+strconv.Itoa(i))
		switch {
		case err != nil:
			return err
		case status != 201:
			return fmt.Errorf("%s: %d %s", what, status, resp)
		case read != nil:
			return read(i, resp)
		}
		return nil
	}
}

// keyPrefix is a new Idempotency-Key prefix for one set of requests:
// what they are, the run and the set.
func (h *harness) keyPrefix(what string) string {
	h.keySeq++
	return fmt.Sprintf("%s-%d-%d-", what, time.Now().UnixNano()%1e9, h.keySeq)
}

// rawEvalSha is the limiter's decision script alone, as go-redis runs it
// for terminal i: the floor under any terminal request. The arguments
// follow lua/ratelimit.lua's header; when they change, change them here.
func (h *harness) rawEvalSha(tag string) func(i int) error {
	script := lua.MustScript("ratelimit.lua")
	ctx := context.Background()
	if err := script.Load(ctx, h.raw).Err(); err != nil {
		h.t.Fatalf("load ratelimit.lua: %v", err)
	}
	p := "pe:{" + h.store.StoreID + "}:"
	return func(i int) error {
		id, _ := h.term(i)
		keys := []string{p + "promo", p + "rl:s", p + "rl:t:" + id, p + "rl:a:" + id + ":scan"}
		res, err := script.EvalSha(ctx, h.raw, keys, tag+"."+strconv.Itoa(i),
			100000, 1000, "", 100000, 1000, "", 100000, 1000, "scan").Slice()
		if err != nil {
			return fmt.Errorf("raw EVALSHA of ratelimit.lua (did its arguments change? update bench/edge_test.go): %w", err)
		}
		if len(res) == 0 || res[0] != int64(1) {
			return fmt.Errorf("raw EVALSHA of ratelimit.lua denied or odd answer %v: the limits above are not the daemon's", res)
		}
		return nil
	}
}

// measureLookups compares GET /v1/items/{barcode} through the daemon with
// raw EVALSHA of the limiter script, same concurrency, then the lookup's
// latency at 1000 requests per second.
func (h *harness) measureLookups() {
	var ratios, rawRates, rates, p50s, p99s, cpus []float64
	for rep := range h.sz.Reps {
		rawBefore := readProcCPU()
		rawDur, _, err := runConcurrent(h.sz.Lookups, h.rawEvalSha(fmt.Sprintf("raw%d", rep)))
		if err != nil {
			h.t.Fatal(err)
		}
		rawCPU, _ := perOpMicros(rawBefore, readProcCPU(), h.sz.Lookups)
		h.notef("raw EVALSHA at %d callers: CPU per call by process: %s", concurrency, rawCPU)
		cpuBefore := readProcCPU()
		dur, _, err := runConcurrent(h.sz.Lookups, h.lookup)
		if err != nil {
			h.t.Fatal(err)
		}
		cpu, cpuTotal := perOpMicros(cpuBefore, readProcCPU(), h.sz.Lookups)
		cpus = append(cpus, cpuTotal)
		h.notef("lookups at %d callers (posedge pid%d): CPU per lookup by process: %s; %.0f%% of the machine's %d CPUs busy",
			concurrency, h.store.Edge.Pid(), cpu, 100*cpuTotal*float64(h.sz.Lookups)/1e6/dur.Seconds()/float64(runtime.NumCPU()), runtime.NumCPU())
		rawRate, rate := float64(h.sz.Lookups)/rawDur.Seconds(), float64(h.sz.Lookups)/dur.Seconds()
		rawRates, rates, ratios = append(rawRates, rawRate), append(rates, rate), append(ratios, rate/rawRate)
	}
	var decisionP99s []float64
	for range h.sz.Reps {
		before := h.decisionHistogram()
		lat, err := runPaced(h.sz.PacedLookups, 1000, h.lookup)
		if err != nil {
			h.t.Fatal(err)
		}
		after := h.decisionHistogram()
		p50s, p99s = append(p50s, ms(pct(lat, 0.5))), append(p99s, ms(pct(lat, 0.99)))
		decisionP99s = append(decisionP99s, 1000*histQuantile(before, after, 0.99))
	}
	h.add(figure{Name: "limiter_vs_raw_evalsha", Value: median(ratios), Reps: ratios, Goal: ">= 0.6",
		Detail: fmt.Sprintf("GET /v1/items/{barcode} through posedge ÷ raw EVALSHA ratelimit.lua, %d callers, %d ops each; reps %s",
			concurrency, h.sz.Lookups, spread(ratios, "%.2f"))})
	h.add(figure{Name: "lookup_cpu_us", Value: median(cpus), Reps: cpus,
		Detail: fmt.Sprintf("CPU (µs) every process on the machine spent per lookup at %d callers, the harness's HTTP client included (by process in the notes); reps %s", concurrency, spread(cpus, "%.0f"))})
	h.add(figure{Name: "lookup_per_s", Value: median(rates), Reps: rates, Detail: "lookups/s through posedge; reps " + spread(rates, "%.0f")})
	h.add(figure{Name: "raw_evalsha_per_s", Value: median(rawRates), Reps: rawRates, Detail: "raw EVALSHA/s; reps " + spread(rawRates, "%.0f")})
	h.add(figure{Name: "limiter_p99_ms", Value: median(decisionP99s), Reps: decisionP99s, Goal: "<= 2",
		Detail: fmt.Sprintf("p99 of the limiter's decision inside posedge (posedge_ratelimit_decision_seconds, interpolated in its bucket) while GET /v1/items/{barcode} comes at 1000 req/s, %d each; reps %s",
			h.sz.PacedLookups, spread(decisionP99s, "%.2f"))})
	h.add(figure{Name: "lookup_p99_ms", Value: median(p99s), Reps: p99s,
		Detail: "p99 of those lookups as the caller sees them (HTTP, limiter, item read); reps " + spread(p99s, "%.2f")})
	h.add(figure{Name: "lookup_p50_ms", Value: median(p50s), Reps: p50s, Detail: "p50 of the same; reps " + spread(p50s, "%.2f")})
}

// decisionHistogram is the daemon's histogram of limiter decisions.
func (h *harness) decisionHistogram() []bucket {
	const name = "posedge_ratelimit_decision_seconds"
	b, err := scrapeHistogram(h.http, h.store.AdminURL+"/metrics", name)
	if err != nil {
		h.t.Fatalf("%v (renamed? update bench/edge_test.go)", err)
	}
	return b
}

// measureSalesAndReplay runs, per repetition: sales paced at 100/s (the
// sale's latency, replay running as in a store), raw JetStream async
// publishes, then with HQ's NATS down raw SQLite FULL commits against
// durable sales through the daemon, then NATS back up and the replayer
// draining exactly those sales unthrottled.
func (h *harness) measureSalesAndReplay() {
	var saleRatios, saleRates, rawCommitRates, p99s, p50s, cp99s []float64
	var replayRatios, replayRates, rawPubRates, cpus []float64
	var breakdown []string
	for range h.sz.Reps {
		lat, err := runPaced(h.sz.PacedSales, 100, h.saleOp())
		if err != nil {
			h.t.Fatal(err)
		}
		h.sales += h.sz.PacedSales
		p50s, p99s = append(p50s, ms(pct(lat, 0.5))), append(p99s, ms(pct(lat, 0.99)))

		rawPub := h.rawPublish(h.sz.Sales)
		h.waitBacklogEmpty()

		h.store.NATS.Stop()
		rawCommit := h.rawCommits(h.sz.Sales)
		before, cpuBefore := h.metrics(), readProcCPU()
		dur, clat, err := runConcurrent(h.sz.Sales, h.saleOp())
		if err != nil {
			h.t.Fatal(err)
		}
		cpuAfter, after := readProcCPU(), h.metrics()
		h.noteDegraded(before, after)
		cpu, cpuTotal := perOpMicros(cpuBefore, cpuAfter, h.sz.Sales)
		cpus = append(cpus, cpuTotal)
		h.notef("sales at %d callers: CPU per sale by process: %s; %.0f%% of the machine's %d CPUs busy",
			concurrency, cpu, 100*cpuTotal*float64(h.sz.Sales)/1e6/dur.Seconds()/float64(runtime.NumCPU()), runtime.NumCPU())
		mean := func(name string) float64 {
			n := after[name+"_count"] - before[name+"_count"]
			if n <= 0 {
				return 0
			}
			return 1000 * (after[name+"_sum"] - before[name+"_sum"]) / n
		}
		var total time.Duration
		for _, d := range clat {
			total += d
		}
		breakdown = append(breakdown, fmt.Sprintf("caller %.1f ms = limiter %.1f + sale script with WAIT %.1f + journal commit %.1f + the rest; %.1f writes per journal commit",
			ms(total)/float64(len(clat)), mean("posedge_ratelimit_decision_seconds"),
			mean("posedge_lua_script_seconds"), mean("posedge_journal_commit_seconds"), mean("posedge_journal_commit_batch_size")/1000))
		h.sales += h.sz.Sales
		sales := float64(h.sz.Sales) / dur.Seconds()
		saleRates, rawCommitRates = append(saleRates, sales), append(rawCommitRates, rawCommit)
		saleRatios, cp99s = append(saleRatios, sales/rawCommit), append(cp99s, ms(pct(clat, 0.99)))

		replay := h.drainAfterOutage(h.sz.Sales)
		rawPubRates, replayRates = append(rawPubRates, rawPub), append(replayRates, replay)
		replayRatios = append(replayRatios, replay/rawPub)
	}
	h.add(figure{Name: "sales_vs_raw_sqlite_commit", Value: median(saleRatios), Reps: saleRatios, Goal: ">= 1.0",
		Detail: fmt.Sprintf("durable sales/s through posedge (Sentinel, WAIT 1 replica, journal FULL) ÷ raw single-row SQLite FULL commits/s on the same disk, %d callers, %d each; reps %s",
			concurrency, h.sz.Sales, spread(saleRatios, "%.2f"))})
	h.add(figure{Name: "sales_per_s", Value: median(saleRates), Reps: saleRates, Detail: "durable sales/s; reps " + spread(saleRates, "%.0f")})
	h.add(figure{Name: "raw_sqlite_commits_per_s", Value: median(rawCommitRates), Reps: rawCommitRates, Detail: "raw commits/s; reps " + spread(rawCommitRates, "%.0f")})
	h.add(figure{Name: "sale_p99_ms", Value: median(p99s), Reps: p99s, Goal: "",
		Detail: fmt.Sprintf("p99 of POST /v1/sales at 100 sales/s (replay running), %d each; reps %s", h.sz.PacedSales, spread(p99s, "%.2f"))})
	h.add(figure{Name: "sale_p50_ms", Value: median(p50s), Reps: p50s, Detail: "p50 of the same; reps " + spread(p50s, "%.2f")})
	for i, b := range breakdown {
		h.notef("sales at %d callers, rep %d, means: %s", concurrency, i+1, b)
	}
	h.add(figure{Name: "sale_cpu_us", Value: median(cpus), Reps: cpus,
		Detail: fmt.Sprintf("CPU (µs) every process on the machine spent per sale at %d callers, the harness's HTTP client included (by process in the notes); reps %s", concurrency, spread(cpus, "%.0f"))})
	h.add(figure{Name: "sale_p99_ms_saturated", Value: median(cp99s), Reps: cp99s,
		Detail: fmt.Sprintf("p99 of the sales at %d callers (queueing included); reps %s", concurrency, spread(cp99s, "%.1f"))})
	h.add(figure{Name: "replay_vs_raw_jetstream", Value: median(replayRatios), Reps: replayRatios, Goal: ">= 0.5",
		Detail: fmt.Sprintf("posedge's replayer draining %d journaled sales unthrottled (first ack to last) ÷ raw JetStream async publish of as many messages; reps %s",
			h.sz.Sales, spread(replayRatios, "%.2f"))})
	h.add(figure{Name: "replay_msgs_per_s", Value: median(replayRates), Reps: replayRates, Detail: "replayed/s; reps " + spread(replayRates, "%.0f")})
	h.add(figure{Name: "raw_jetstream_msgs_per_s", Value: median(rawPubRates), Reps: rawPubRates, Detail: "raw publishes/s; reps " + spread(rawPubRates, "%.0f")})
}

// rawCommits is n single-row SQLite commits (WAL, synchronous=FULL: one
// fsync each) beside the journal, from the same number of callers over
// one connection (SQLite has one writer); it returns commits/s.
func (h *harness) rawCommits(n int) float64 {
	path := filepath.Join(h.t.TempDir(), "raw.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)")
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`); err != nil {
		h.t.Fatal(err)
	}
	body := []byte(`{"flow_no":"1000000000000001","store_id":"S1","terminal_id":"T01","kind":"sale","total_cents":199}`)
	dur, _, err := runConcurrent(n, func(int) error {
		_, err := db.Exec(`INSERT INTO t (body) VALUES (?)`, body)
		return err
	})
	if err != nil {
		h.t.Fatalf("raw commit: %v", err)
	}
	return float64(n) / dur.Seconds()
}

// sampleBody is a transaction body as the edge journals it.
func (h *harness) sampleBody() []byte {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.store.Dir, "journal.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	var body []byte
	if err := db.QueryRow(`SELECT body FROM txns LIMIT 1`).Scan(&body); err != nil {
		h.t.Fatalf("a journaled body: %v", err)
	}
	return body
}

// rawPublish is n JetStream async publishes of a journaled body, with
// the edge's headers, into a stream of their own on the same server; it
// returns messages/s.
func (h *harness) rawPublish(n int) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const stream = "RAWBENCH"
	if err := h.js.DeleteStream(ctx, stream); err != nil && err != jetstream.ErrStreamNotFound {
		h.t.Fatalf("delete stream %s: %v", stream, err)
	}
	if _, err := h.js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"rawbench.>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute}); err != nil {
		h.t.Fatalf("create stream %s: %v", stream, err)
	}
	body := h.sampleBody()
	subject := "rawbench." + h.store.StoreID
	start := time.Now()
	futs := make([]jetstream.PubAckFuture, n)
	for k := range n {
		m := nats.NewMsg(subject)
		m.Data = body
		m.Header.Set(wire.HeaderMsgID, fmt.Sprintf("%s.%d.%d", h.store.StoreID, start.UnixNano(), k))
		m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
		f, err := h.js.PublishMsgAsync(m)
		if err != nil {
			h.t.Fatalf("raw publish: %v", err)
		}
		futs[k] = f
	}
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			h.t.Fatalf("raw publish ack: %v", err)
		case <-ctx.Done():
			h.t.Fatal("raw publish acks: timed out")
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// waitBacklogEmpty waits until every journaled row is acknowledged by
// JetStream.
func (h *harness) waitBacklogEmpty() {
	deadline := time.Now().Add(5 * time.Minute)
	for h.store.JournalRows("acked_at IS NULL") > 0 {
		if time.Now().After(deadline) {
			h.t.Fatalf("journal backlog not drained: %d rows", h.store.JournalRows("acked_at IS NULL"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// drainAfterOutage starts NATS again, wakes the replayer (`posedge sync
// now`) and times it from its first acknowledged row to its last; it
// returns rows/s. The reconnect's backoff is not the replayer's speed.
func (h *harness) drainAfterOutage(n int) float64 {
	base := h.metrics()["posedge_replay_acked_total"]
	target := base + float64(n)
	h.store.NATS.Start()
	h.connectNATS()
	restarted := time.Now()
	var first time.Time
	var firstAcked float64
	deadline := restarted.Add(5 * time.Minute)
	for kicked := false; ; {
		if !kicked && h.metrics()["posedge_hq_connected"] == 1 {
			call(h.http, "POST", h.store.AdminURL+"/admin/v1/sync/now", "", nil, "")
			kicked = true
		}
		acked := h.metrics()["posedge_replay_acked_total"]
		now := time.Now()
		if acked > base && first.IsZero() {
			first, firstAcked = now, acked
		}
		if acked >= target {
			// Seen in one look (a small backlog): the rate from the restart
			// is all there is to say.
			if now.Sub(first) < 2*pollEvery || target-firstAcked < float64(n)/4 {
				h.notef("replay: %d rows drained between two looks; timed from the NATS restart, reconnect included", n)
				return float64(n) / now.Sub(restarted).Seconds()
			}
			return (target - firstAcked) / now.Sub(first).Seconds()
		}
		if now.After(deadline) {
			h.t.Fatalf("replay: %v of %d rows acknowledged", acked-base, n)
		}
		time.Sleep(pollEvery)
	}
}

// redisStats is one INFO of the master.
type redisStats struct {
	reads int64            // total_reads_processed: one per request read, a pipeline in one read counts once
	calls map[string]int64 // commandstats calls, commands run by scripts included
}

func (h *harness) redisInfo(c *redis.Client) redisStats {
	info, err := c.Info(context.Background(), "stats", "commandstats").Result()
	if err != nil {
		h.t.Fatalf("INFO: %v", err)
	}
	st := redisStats{calls: map[string]int64{}}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
			st.reads, _ = strconv.ParseInt(v, 10, 64)
		}
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, fields, _ := strings.Cut(rest, ":")
			for _, f := range strings.Split(fields, ",") {
				if v, ok := strings.CutPrefix(f, "calls="); ok {
					st.calls[name], _ = strconv.ParseInt(v, 10, 64)
				}
			}
		}
	}
	return st
}

// trafficRate is the master's background traffic per second: sentinels,
// replicas, the daemon's own timers.
type trafficRate struct {
	reads float64
	calls map[string]float64
}

// perOp is the master's traffic per operation over [a, b] of n
// operations, the background rate and the INFO that read b taken out.
func perOp(a, b redisStats, el time.Duration, bg trafficRate, n int) (float64, map[string]float64) {
	reads := (float64(b.reads-a.reads) - 1 - bg.reads*el.Seconds()) / float64(n)
	calls := map[string]float64{}
	for name, v := range b.calls {
		if name == "info" {
			continue
		}
		d := (float64(v-a.calls[name]) - bg.calls[name]*el.Seconds()) / float64(n)
		if d > 0.05 {
			calls[name] = d
		}
	}
	return reads, calls
}

func sumCalls(c map[string]float64) float64 {
	var s float64
	for _, v := range c {
		s += v
	}
	return s
}

func callsString(c map[string]float64) string {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, c[n])
	}
	return strings.Join(parts, ", ")
}

// measureRoundTrips counts the Redis requests of one lookup and one sale,
// sequentially, from the master's INFO: total_reads_processed (request
// reads: a pipeline is one) and commandstats (commands, those of scripts
// included), less the background traffic measured idle. A WAIT makes
// the master read each replica's REPLCONF ACK as well; that cost is
// measured with a known pipeline and taken out of the sale's count.
func (h *harness) measureRoundTrips() {
	ctx := context.Background()
	idx := h.store.Redis.MasterIndex()
	if idx < 0 {
		h.t.Fatal("no Redis master")
	}
	m := h.store.Redis.NodeClient(idx)
	a := h.redisInfo(m)
	t0 := time.Now()
	time.Sleep(2 * time.Second)
	b := h.redisInfo(m)
	el := time.Since(t0)
	bg := trafficRate{reads: (float64(b.reads-a.reads) - 1) / el.Seconds(), calls: map[string]float64{}}
	for name, v := range b.calls {
		bg.calls[name] = float64(v-a.calls[name]) / el.Seconds()
	}

	// Calibration: SET + WAIT 1 in one pipeline is one request read.
	const calib = 50
	a, t0 = h.redisInfo(m), time.Now()
	for i := range calib {
		pipe := m.Pipeline()
		pipe.Set(ctx, "bench:calibrate", i, 0)
		pipe.Do(ctx, "WAIT", 1, 1000)
		if _, err := pipe.Exec(ctx); err != nil {
			h.t.Fatalf("calibrate WAIT: %v", err)
		}
	}
	b = h.redisInfo(m)
	calReads, _ := perOp(a, b, time.Since(t0), bg, calib)
	waitExtra := max(calReads-1, 0)

	run := func(n int, op func(i int) error) (float64, map[string]float64) {
		a, t0 := h.redisInfo(m), time.Now()
		for i := range n {
			if err := op(i); err != nil {
				h.t.Fatal(err)
			}
		}
		b := h.redisInfo(m)
		el := time.Since(t0)
		reads, calls := perOp(a, b, el, bg, n)
		waits := float64(b.calls["wait"]-a.calls["wait"]) / float64(n)
		return reads - waits*waitExtra, calls
	}
	// Warm the daemon's connections and script cache first.
	for i := range 5 {
		if err := h.lookup(i); err != nil {
			h.t.Fatal(err)
		}
	}
	warm := h.saleOp()
	for i := range 3 {
		if err := warm(i); err != nil {
			h.t.Fatal(err)
		}
	}
	h.sales += 3
	lookupRT, lookupCalls := run(h.sz.RTLookups, h.lookup)
	saleRT, saleCalls := run(h.sz.RTSales, h.saleOp())
	h.sales += h.sz.RTSales
	h.add(figure{Name: "redis_round_trips_per_lookup", Value: lookupRT, Goal: "1",
		Detail: fmt.Sprintf("Δ total_reads_processed of the master per lookup, background taken out; %d sequential", h.sz.RTLookups)})
	h.add(figure{Name: "redis_commands_per_lookup", Value: sumCalls(lookupCalls),
		Detail: "Δ INFO commandstats per lookup (script commands included): " + callsString(lookupCalls)})
	h.add(figure{Name: "redis_round_trips_per_sale", Value: saleRT,
		Detail: fmt.Sprintf("as per lookup, less %.2f replica REPLCONF ACK reads per WAIT (calibrated); %d sequential", waitExtra, h.sz.RTSales)})
	h.add(figure{Name: "redis_commands_per_sale", Value: sumCalls(saleCalls),
		Detail: "Δ INFO commandstats per sale: " + callsString(saleCalls)})
}
