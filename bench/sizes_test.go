package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/hqdb/postgres"
)

// How cost grows (issue 26): each hot path at two sizes, in the same run,
// so the slope shows. Each `…_vs_…` figure is the rate at the large size
// ÷ the rate at the small one: 1 is flat, below 0.5 a path that degrades
// more than 2× (a finding, named in the notes).

// sizeFigures are the slopes every run prints.
var sizeFigures = []string{"lookup_1m_vs_100_items", "limiter_1000_vs_10_terminals",
	"catalog_100k_vs_1k_changes", "sales_journal_large_vs_small", "refunds_journal_large_vs_small", "hq_ingest_10m_vs_empty_postgres", "lookup_vs_http_evalsha_floor"}

// sizeSet are the sizes: the full run's and the smoke's.
type sizeSet struct {
	ItemsSmall, ItemsLarge     int
	TermsSmall, TermsLarge     int
	CatalogSmall, CatalogLarge int
	JournalAdd                 int // rows the journal is grown by
	HQRows                     int // rows of other stores in HQ's transactions table at the large size
}

var (
	fullSizeSet  = sizeSet{100, 1_000_000, 10, 1000, 1000, 100_000, 2_000_000, 10_000_000}
	smokeSizeSet = sizeSet{100, 2000, 10, 100, 100, 1000, 5000, 1000}
)

func (h *harness) sizeSet() sizeSet {
	if h.sz.Lookups == fullSizes.Lookups {
		return fullSizeSet
	}
	return smokeSizeSet
}

// slopesEnv names the slopes of the sizes phase a run measures
// (hqingest, catalog, terminals, journal, items; comma-separated, all
// when unset):
// the catalog's alone takes ~12 minutes. Use it with phasesEnv=sizes.
const slopesEnv = "POSEDGE_BENCH_SLOPES"

// measureSizes runs last: it leaves a million items in Redis, a thousand
// terminals configured and a journal of millions of rows.
func (h *harness) measureSizes() {
	ss := h.sizeSet()
	// Each slope in a subtest: one that fails is noted, the others still
	// measured. The million items last: writing them can push posedge
	// into degraded mode on a loaded box (a finding of its own).
	t := h.t
	for _, s := range []struct {
		name string
		fn   func(sizeSet)
	}{
		// HQ's first: it ingests the run's stream, and the journal's
		// slope adds rows to the journal that were never sent.
		{"hqingest", h.measureHQIngestSizes},
		{"catalog", h.measureCatalogSizes}, {"terminals", h.measureTerminalSizes},
		{"journal", h.measureJournalSizes}, {"items", h.measureItemSizes},
	} {
		if only := os.Getenv(slopesEnv); only != "" && !slices.Contains(strings.Split(only, ","), s.name) {
			continue
		}
		if !h.phase(t, s.name, func() { s.fn(ss) }) {
			h.notef("FINDING sizes/%s: the slope failed (see the test log)", s.name)
		}
	}
}

// slope adds the two sizes' rates and their ratio, and notes a path that
// degrades more than 2×. Without large (the smoke), the small size alone.
func (h *harness) slope(name, what string, small, large []float64, smallLoads, largeLoads []float64, nSmall, nLarge int, unit string) {
	if len(large) == 0 {
		h.add(figure{Name: name + "_small", Value: median(small), Reps: small, Loads: smallLoads,
			Detail: fmt.Sprintf("%s at %d (%s; the large size not measured in the smoke)", unit, nSmall, what)})
		return
	}
	ratios := make([]float64, len(small))
	for i := range small {
		ratios[i] = large[i] / small[i]
	}
	h.add(figure{Name: name, Value: median(ratios), Goal: ">= 0.5", Reps: ratios, Loads: largeLoads,
		Detail: fmt.Sprintf("%s: %s at %d ÷ at %d (the repetitions pair up)", what, unit, nLarge, nSmall)})
	h.add(figure{Name: name + "_small", Value: median(small), Reps: small, Loads: smallLoads,
		Detail: fmt.Sprintf("%s at %d", unit, nSmall)})
	h.add(figure{Name: name + "_large", Value: median(large), Reps: large, Loads: largeLoads,
		Detail: fmt.Sprintf("%s at %d", unit, nLarge)})
	if median(ratios) < 0.5 {
		h.notef("FINDING %s: %s degrades %.1f× from %d to %d", name, what, 1/median(ratios), nSmall, nLarge)
	}
}

// putItemsRaw writes items SZ<n> for n in [from, to) straight into Redis
// in the layout posedge's ledger keeps (pe:{store}:item:<barcode>, a hash
// of name, price_cents, stock), pipelined: the admin API would take
// minutes for a million.
func (h *harness) putItemsRaw(from, to int) {
	ctx := context.Background()
	// Pipelines of 1000 each followed by WAIT for both replicas: the
	// write keeps pace with replication instead of starving the daemon's
	// own calls (the first full run, at load 28, had posedge time out on
	// Redis and turn degraded while a million items went in unthrottled).
	const batch = 1000
	for lo := from; lo < to; lo += batch {
		pipe := h.raw.Pipeline()
		for n := lo; n < min(lo+batch, to); n++ {
			bc := sizeBarcode(n)
			pipe.HSet(ctx, "pe:{"+h.store.StoreID+"}:item:"+bc, "name", "item "+bc, "price_cents", 199, "stock", 1000)
		}
		pipe.Do(ctx, "WAIT", 2, 5000)
		if _, err := pipe.Exec(ctx); err != nil {
			h.t.Fatalf("put items %d..%d: %v", lo, to, err)
		}
	}
	h.settle()
}

// settle waits until no Redis node rewrites its AOF and posedge is in
// normal mode: what a bulk write set going is not measured as the path's.
func (h *harness) settle() {
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Minute)
	var nodes []*redis.Client
	for n := range len(h.store.Redis.NodePorts) {
		nodes = append(nodes, h.store.Redis.NodeClient(n))
	}
	for {
		busy := false
		for _, c := range nodes {
			info, err := c.Info(ctx, "persistence").Result()
			if err == nil && (strings.Contains(info, "aof_rewrite_in_progress:1") || strings.Contains(info, "rdb_bgsave_in_progress:1")) {
				busy = true
			}
		}
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			h.notef("sizes: Redis still rewriting its AOF after 5 minutes; measured anyway")
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	h.waitReady(2 * time.Minute)
}

func sizeBarcode(n int) string { return fmt.Sprintf("SZ%07d", n) }

// lookupOf looks up item (i·a prime) mod n: every call another item,
// spread over the whole set.
func (h *harness) lookupOf(n int) func(i int) error {
	return func(i int) error {
		_, key := h.term(i)
		bc := sizeBarcode(int((uint64(i) * 2654435761) % uint64(n)))
		status, body, err := call(h.http, "GET", h.store.EdgeURL+"/v1/items/"+bc, key, nil, "")
		if err == nil && status != 200 {
			err = fmt.Errorf("lookup %s: %d %s", bc, status, body)
		}
		return err
	}
}

func (h *harness) rate(n int, op func(i int) error) float64 {
	before := h.metrics()
	d, _, err := runConcurrent(n, op)
	if err != nil {
		h.t.Fatal(err)
	}
	h.noteDegraded(before, h.metrics())
	return float64(n) / d.Seconds()
}

// degradedSalesSeries counts the sales posedge journaled without Redis.
const degradedSalesSeries = `posedge_sales_total{kind="sale",mode="degraded"}`

// noteDegraded says when sales between two scrapes went degraded (Redis
// did not answer within redis.timeout): the figure then measured
// journal-only sales, not the normal path (the 2026-12-05 journal slope
// did, behind the reconciliation's one script over 100,000 items).
func (h *harness) noteDegraded(before, after map[string]float64) {
	if n := after[degradedSalesSeries] - before[degradedSalesSeries]; n > 0 {
		h.notef("FINDING %s: %.0f sales journaled in degraded mode during this measurement (Redis did not answer in time); see posedge's log", h.t.Name(), n)
	}
}

func (h *harness) measureItemSizes(ss sizeSet) {
	h.putItemsRaw(0, ss.ItemsSmall)
	var small, large, sl, ll []float64
	for range h.sz.Reps {
		small, sl = append(small, h.rate(h.sz.Lookups, h.lookupOf(ss.ItemsSmall))), append(sl, loadAvg())
	}
	if h.sz.Slopes {
		t0 := time.Now()
		h.putItemsRaw(ss.ItemsSmall, ss.ItemsLarge)
		h.notef("sizes: %d items written into Redis in %s (pipelines of 5000 HSET)", ss.ItemsLarge-ss.ItemsSmall, time.Since(t0).Round(time.Millisecond))
		for range h.sz.Reps {
			large, ll = append(large, h.rate(h.sz.Lookups, h.lookupOf(ss.ItemsLarge))), append(ll, loadAvg())
		}
	}
	h.slope("lookup_1m_vs_100_items", fmt.Sprintf("GET /v1/items/{barcode} of a different item each call, %d callers, %d each", concurrency, h.sz.Lookups),
		small, large, sl, ll, ss.ItemsSmall, ss.ItemsLarge, "lookups/s with items in Redis")
}

// measureTerminalSizes configures the daemon with TermsLarge terminals
// and compares lookups spread over TermsSmall of them with lookups
// spread over all: per-terminal limiter keys and state.
func (h *harness) measureTerminalSizes(ss sizeSet) {
	if n := ss.TermsLarge - len(h.store.Terminals); n > 0 && h.sz.Slopes {
		t0 := time.Now()
		h.store.AddTerminals(n)
		h.notef("sizes: posedge restarted with %d terminals configured in %s", len(h.store.Terminals), time.Since(t0).Round(time.Millisecond))
	}
	over := func(k int) func(i int) error {
		return func(i int) error {
			id := h.store.Terminals[i%k]
			status, body, err := call(h.http, "GET", h.store.EdgeURL+"/v1/items/BENCH1", h.store.Keys[id], nil, "")
			if err == nil && status != 200 {
				err = fmt.Errorf("lookup as %s: %d %s", id, status, body)
			}
			return err
		}
	}
	var small, large, sl, ll []float64
	for range h.sz.Reps {
		small, sl = append(small, h.rate(h.sz.Lookups, over(ss.TermsSmall))), append(sl, loadAvg())
		if h.sz.Slopes {
			large, ll = append(large, h.rate(h.sz.Lookups, over(ss.TermsLarge))), append(ll, loadAvg())
		}
	}
	h.slope("limiter_1000_vs_10_terminals", fmt.Sprintf("GET /v1/items/{barcode} (limiter decision, item read) spread over the terminals, %d configured, %d callers, %d each", len(h.store.Terminals), concurrency, h.sz.Lookups),
		small, large, sl, ll, ss.TermsSmall, ss.TermsLarge, "lookups/s")
}

// measureCatalogSizes: HQ's catalog bucket holds n new changes while the
// daemon is stopped (SIGSTOP); from SIGCONT, the time until the daemon
// has applied through the last one.
func (h *harness) measureCatalogSizes(ss sizeSet) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The bucket as posedge-hq makes it, republishing each change to the
	// stores: made bare (until 2026-12-05), posedge learnt of changes at
	// its minute's poll only and the slope measured that wait (1,000
	// changes "caught up" at 17-44/s).
	kv, err := hq.NewCatalog(hq.Config{CatalogBucket: "POS_CATALOG"}, h.js).Bucket(ctx)
	if err != nil {
		h.t.Fatalf("catalog bucket: %v", err)
	}
	// The first change makes the daemon reload; the measured ones resume.
	rev, err := kv.Put(ctx, "_all.CATSEED", []byte(`{"name":"seed","price_cents":100,"active":true}`))
	if err != nil {
		h.t.Fatalf("catalog put: %v", err)
	}
	h.waitCatalog(rev, 2*time.Minute)
	seq := 0
	catchUp := func(n int) float64 {
		h.store.Edge.Signal(syscall.SIGSTOP)
		futs := make([]jetstream.PubAckFuture, n)
		for k := range n {
			seq++
			v, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("catalog %d", seq), "price_cents": 100 + seq%1000, "active": true})
			f, err := h.js.PublishAsync(fmt.Sprintf("$KV.POS_CATALOG._all.CAT%07d", seq%200_000), v)
			if err != nil {
				h.store.Edge.Signal(syscall.SIGCONT)
				h.t.Fatalf("catalog publish: %v", err)
			}
			futs[k] = f
			if k%2000 == 1999 { // within the client's async window (WithPublishAsyncMaxPending 4096)
				select {
				case <-h.js.PublishAsyncComplete():
				case <-ctx.Done():
				}
			}
		}
		var last uint64
		for _, f := range futs {
			select {
			case a := <-f.Ok():
				last = max(last, a.Sequence)
			case err := <-f.Err():
				h.store.Edge.Signal(syscall.SIGCONT)
				h.t.Fatalf("catalog publish ack: %v", err)
			}
		}
		start := time.Now()
		h.store.Edge.Signal(syscall.SIGCONT)
		h.waitCatalog(last, 5*time.Minute)
		return float64(n) / time.Since(start).Seconds()
	}
	var small, large, sl, ll []float64
	for range h.sz.Reps {
		small, sl = append(small, catchUp(ss.CatalogSmall)), append(sl, loadAvg())
		if h.sz.Slopes {
			large, ll = append(large, catchUp(ss.CatalogLarge)), append(ll, loadAvg())
		}
	}
	h.slope("catalog_100k_vs_1k_changes", "catalog catch-up: changes put into HQ's bucket while posedge was SIGSTOPped, from SIGCONT to posedge_catalog_revision at the last (polled every 20 ms)",
		small, large, sl, ll, ss.CatalogSmall, ss.CatalogLarge, "changes applied/s")
}

// waitCatalog waits for the daemon to have applied the catalog through
// revision rev.
func (h *harness) waitCatalog(rev uint64, d time.Duration) {
	deadline := time.Now().Add(d)
	for h.metrics()["posedge_catalog_revision"] < float64(rev) {
		if time.Now().After(deadline) {
			h.t.Fatalf("catalog: revision %v applied, want %d", h.metrics()["posedge_catalog_revision"], rev)
		}
		time.Sleep(pollEvery)
	}
}

// measureJournalSizes compares durable sales, and refunds of them, with
// the journal as this run left it and grown by JournalAdd rows
// (acknowledged, confirmed sales of an earlier day with their lines, as a
// store's journal holds within its retention).
func (h *harness) measureJournalSizes(ss sizeSet) {
	var small, large, sl, ll []float64
	var rSmall, rLarge, rsl, rll []float64
	refunds := max(h.sz.Sales/4, 10)
	measure := func(rates, loads, rRates, rLoads *[]float64) {
		*rates, *loads = append(*rates, h.rate(h.sz.Sales, h.saleOp())), append(*loads, loadAvg())
		h.sales += h.sz.Sales
		*rRates, *rLoads = append(*rRates, h.rate(refunds, h.refundOp(h.salesToRefund(refunds)))), append(*rLoads, loadAvg())
	}
	before := h.store.JournalRows("")
	for range h.sz.Reps {
		measure(&small, &sl, &rSmall, &rsl)
	}
	salesWhat := fmt.Sprintf("durable POST /v1/sales, %d callers, %d each", concurrency, h.sz.Sales)
	refundsWhat := fmt.Sprintf("POST /v1/refunds of one line of a sale made just before (its refunds looked up in the journal), %d callers, %d each", concurrency, refunds)
	if !h.sz.Slopes {
		h.slope("sales_journal_large_vs_small", salesWhat, small, nil, sl, nil, before, 0, "sales/s with the journal")
		h.slope("refunds_journal_large_vs_small", refundsWhat, rSmall, nil, rsl, nil, before, 0, "refunds/s with the journal")
		return
	}
	h.store.Edge.Kill()
	t0 := time.Now()
	grown := h.growJournal(ss.JournalAdd)
	h.notef("sizes: %d rows added to the journal (one SQL statement, posedge stopped) in %s", grown, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	h.store.StartEdge()
	h.notef("sizes: posedge started on a journal of %d rows, ready in %s", h.store.JournalRows(""), time.Since(t0).Round(time.Millisecond))
	rows := h.store.JournalRows("")
	for range h.sz.Reps {
		measure(&large, &ll, &rLarge, &rll)
	}
	sizes := fmt.Sprintf(", journal of %d rows then of %d", before, rows)
	h.slope("sales_journal_large_vs_small", salesWhat+sizes, small, large, sl, ll, before, rows, "sales/s with the journal")
	h.slope("refunds_journal_large_vs_small", refundsWhat+sizes, rSmall, rLarge, rsl, rll, before, rows, "refunds/s with the journal")
}

// salesToRefund makes n sales (not timed) and returns their flow numbers.
func (h *harness) salesToRefund(n int) []string {
	flows := make([]string, n)
	_, _, err := runConcurrent(n, h.postOp("to-refund", "/v1/sales", func(int) []byte { return saleBody }, func(i int, resp []byte) error {
		var r struct {
			FlowNo string `json:"flow_no"`
		}
		if json.Unmarshal(resp, &r) != nil || r.FlowNo == "" {
			return fmt.Errorf("sale to refund: no flow_no in %s", resp)
		}
		flows[i] = r.FlowNo
		return nil
	}))
	if err != nil {
		h.t.Fatal(err)
	}
	h.sales += n
	return flows
}

// refundOp refunds the one line of flows[i]'s sale (saleBody).
func (h *harness) refundOp(flows []string) func(i int) error {
	return h.postOp("refund", "/v1/refunds", func(i int) []byte {
		return []byte(`{"original_flow_no":"` + flows[i] + `","lines":[{"barcode":"BENCH2","qty":1}],"total_cents":199}`)
	}, nil)
}

// growJournal adds n acknowledged, confirmed sale rows of an earlier day
// (flow numbers Bxxxxxxxxxxxxxxx, outside every range posedge hands out)
// to the stopped daemon's journal, in one statement.
func (h *harness) growJournal(n int) int {
	if n <= 0 {
		return 0
	}
	db, err := sql.Open("sqlite", "file:"+h.store.Journal+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// Stamped two days back, as sales of an earlier day are: rows
	// journaled within ledger.ReapplyWindow are ones a Redis that lost
	// writes must get again, and posedge rightly re-applied these two
	// million when they said "now" (the 2026-12-05 run's items phase
	// found it busy doing so, not ready within 2 minutes, and the journal
	// slope was measured beside that walk).
	now := time.Now().Add(-48 * time.Hour).UTC().Format(time.RFC3339Nano)
	body := `{"store_id":"` + h.store.StoreID + `","terminal_id":"T01","kind":"sale","total_cents":199,"tender":"cash","lines":[{"barcode":"BENCH2","qty":1,"price_cents":199}]}`
	res, err := db.Exec(`WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c WHERE n < ?)
		INSERT INTO txns (flow_no, seq, terminal_id, idem_key, fingerprint, kind, tender, total_cents, business_day, business_hour,
			created_at, body, mode, applied, state, journaled_at, acked_at, confirmed_at)
		SELECT printf('B%015d', n), 0, 'T01', printf('bulk-%d', n), 'bulk', 'sale', 'cash', 199, '20260101', '2026010112',
			?, ?, 'normal', 1, 'acked', ?, ?, ? FROM c`, n, now, body, now, now, now)
	if err != nil {
		h.t.Fatalf("grow the journal: %v", err)
	}
	got, _ := res.RowsAffected()
	// Their lines: a refund's look-up of earlier refunds joins txn_lines,
	// and read without its index it scanned every line (2026-12-06).
	if _, err := db.Exec(`INSERT INTO txn_lines (flow_no, n, barcode, qty, price_cents)
		SELECT flow_no, 0, 'BENCH2', 1, 199 FROM txns WHERE flow_no >= 'B' AND flow_no < 'C'`); err != nil {
		h.t.Fatalf("grow the journal's lines: %v", err)
	}
	return int(got)
}

// measureHQIngestSizes: posedge-hq ingesting the run's stream into an
// empty PostgreSQL database, then into one whose transactions table
// already holds HQRows rows of 1,000 other stores (a chain's weeks), each
// repetition into a fresh copy of it.
func (h *harness) measureHQIngestSizes(ss sizeSet) {
	want := h.streamRows()
	var small, large, sl, ll []float64
	var big string
	if h.sz.Slopes {
		t0 := time.Now()
		big = h.bigHQDatabase(ss.HQRows)
		h.notef("sizes: PostgreSQL database with %d transactions of other stores built in %s", ss.HQRows, time.Since(t0).Round(time.Millisecond))
	}
	for rep := range h.sz.Reps {
		dsn := h.pg.NewDatabase(h.t)
		small, sl = append(small, h.hqIngest(fmt.Sprintf("postgres-empty%d", rep), dsn, want, h.postgresCount(dsn))), append(sl, loadAvg())
		if big == "" {
			continue
		}
		dsn = h.pg.CopyDatabase(h.t, big)
		large, ll = append(large, h.hqIngest(fmt.Sprintf("postgres-large%d", rep), dsn, want, h.postgresCount(dsn))), append(ll, loadAvg())
		if n := h.countRows("postgres", dsn); n != want+ss.HQRows {
			h.t.Fatalf("HQ's transactions table holds %d rows, want %d of other stores and %d of this run", n, ss.HQRows, want)
		}
	}
	h.slope("hq_ingest_10m_vs_empty_postgres", fmt.Sprintf("posedge-hq ingesting %d replayed transactions from JetStream (first row stored to last) into PostgreSQL", want),
		small, large, sl, ll, 0, ss.HQRows, "rows/s with other stores' rows in transactions")
}

// bigHQDatabase makes a PostgreSQL database in posedge-hq's schema whose
// transactions table holds n rows of 1,000 stores (IDs "X0000"… that no
// run uses), counted in no stores row, and returns its URL (closed).
func (h *harness) bigHQDatabase(n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dsn := h.pg.NewDatabase(h.t)
	st, err := postgres.Open(ctx, dsn, hqdb.StoreOptions{})
	if err != nil {
		h.t.Fatalf("create HQ's schema: %v", err)
	}
	st.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close(ctx)
	// In primary-key order, as each store's rows arrive over weeks.
	perStore := max(n/1000, 1)
	if _, err := conn.Exec(ctx, `INSERT INTO transactions (store_id, flow_no, terminal_id, kind, total_cents, created_at, body, received_at, business_date)
		SELECT 'X' || lpad(((g - 1) / $2)::text, 4, '0'), lpad(g::text, 16, '0'), 'T01', 'sale', 199,
			now() - interval '7 days', jsonb_build_object('flow_no', lpad(g::text, 16, '0'), 'kind', 'sale', 'total_cents', 199, 'tender', 'cash',
				'lines', jsonb_build_array(jsonb_build_object('barcode', 'BENCH2', 'qty', 1, 'price_cents', 199))),
			now() - interval '7 days', '2026-11-29'
		FROM generate_series(1, $1::bigint) g`, n, perStore); err != nil {
		h.t.Fatalf("fill HQ's transactions: %v", err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE transactions`); err != nil {
		h.t.Fatalf("vacuum HQ's transactions: %v", err)
	}
	return dsn
}
