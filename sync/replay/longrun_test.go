package replay_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ratelimit"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/replay"
	"github.com/posedge/posedge/sync/wire"
)

// outage is the shape of a simulated WAN outage.
type outage struct {
	rows      int           // sales journaled while HQ was unreachable
	days      int           // spread evenly over this many days, ending now
	terminals int           // tills of the store
	batch     int           // hq.batch_size
	limit     int           // limits.actions.sync.limit: batches per window, store-wide
	window    time.Duration // limits.actions.sync.window
}

// The contract's default policy on the week of a busy store:
// 700 batches at 50 per minute, so the policy alone needs 13 minutes.
var weekOutage = outage{rows: 350_000, days: 7, terminals: 8, batch: 500, limit: 50, window: time.Minute}

// What `make test` runs: the same shape, smaller and faster, with a
// budget tight enough to be what decides the time (40 batches at 8 per
// 2 s: 8 s at least).
var shortOutage = outage{rows: 20_000, days: 7, terminals: 8, batch: 500, limit: 8, window: 2 * time.Second}

// TestSevenDayOutageDrainsOnceWithinTheSyncPolicy: a store cut off from
// HQ for seven days has journaled its sales (written straight into a
// journal, not through HTTP); when HQ is reachable again the replayer
// drains them under the real store-wide sync budget (edge/ratelimit on
// Redis), into posedge-hq's receiver over SQLite. HQ then holds every
// journaled sale once, no faster than the policy allows, and the seven
// days' manifests match what HQ stored.
//
// POSEDGE_LONG=1 runs the full size with the default policy
// (about 14 minutes; make test-long).
func TestSevenDayOutageDrainsOnceWithinTheSyncPolicy(t *testing.T) {
	o := shortOutage
	if os.Getenv("POSEDGE_LONG") == "1" {
		o = weekOutage
	}
	const store = "S7D"
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	j, err := journal.Open(ctx, filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	start := time.Now()
	days := buildOutageJournal(t, j, store, o)
	t.Logf("journal of %d sales over %d days (%d business days) built in %v", o.rows, o.days, len(days), time.Since(start).Round(time.Millisecond))
	if st, err := j.Stats(ctx); err != nil || st.Backlog != int64(o.rows) {
		t.Fatalf("journal backlog %+v %v, want %d", st, err, o.rows)
	}

	// HQ: NATS and posedge-hq's receiver on SQLite, as posedge-hq runs it.
	nt := testenv.StartNATS(t)
	hqCfg := hq.DefaultConfig()
	hqCfg.NATSURL = nt.URL()
	hqCfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "hq.db")
	hqStore, err := hq.OpenStore(ctx, hqCfg.Database, hqdb.StoreOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer hqStore.Close()
	recv := hq.NewReceiver(hqCfg, hqStore, hq.NewMetrics(hqStore, "test", log), log, "")
	rctx, stopHQ := context.WithCancel(ctx)
	recvDone := make(chan error, 1)
	go func() { recvDone <- recv.Run(rctx) }()
	defer func() { stopHQ(); <-recvDone }()
	testenv.WaitFor(t, time.Minute, "posedge-hq ready", func() bool { return recv.Ready() == nil })

	// The store-wide sync budget, on Redis, as the daemon charges it.
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	lim, err := ratelimit.New(rdb, ratelimit.Config{StoreID: store, RedisTimeout: time.Second,
		Actions: map[string]ratelimit.Policy{ratelimit.ActionSync: {Limit: o.limit, Window: o.window}}}, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	hits := &countingLimiter{l: lim}
	pace := o.window / time.Duration(max(1, o.limit/2)) // the daemon's pacing at fallback_fraction 0.5
	r, err := replay.New(replay.Config{StoreID: store, NATSURL: nt.URL(), BatchSize: o.batch, Pace: pace,
		Version: "test", Location: time.UTC}, j, hits, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	pctx, stopReplay := context.WithCancel(ctx)
	replayDone := make(chan error, 1)
	start = time.Now()
	go func() { replayDone <- r.Run(pctx) }()
	defer func() { stopReplay(); <-replayDone }()

	count := func() int64 {
		w, err := hqStore.Watermark(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		return w.Count
	}
	next := time.Now().Add(time.Minute)
	testenv.WaitFor(t, 3*time.Duration(o.rows/o.batch/o.limit+1)*o.window+5*time.Minute, "HQ to hold every journaled sale", func() bool {
		n := count()
		if time.Now().After(next) {
			t.Logf("%v: HQ holds %d of %d", time.Since(start).Round(time.Second), n, o.rows)
			next = time.Now().Add(time.Minute)
		}
		return n >= int64(o.rows)
	})
	took := time.Since(start)
	testenv.WaitFor(t, time.Minute, "the journal to have every row acked", func() bool {
		st, err := j.Stats(ctx)
		return err == nil && st.Backlog == 0
	})

	batches := (o.rows + o.batch - 1) / o.batch
	least := time.Duration((batches+o.limit-1)/o.limit-1) * o.window
	st, _ := j.Stats(ctx)
	t.Logf("drained %d sales in %d batches of %d at %d per %v: %v (%.0f sales/s; the policy's least %v); sync hits %d; HQ holds %d, journal %d",
		o.rows, batches, o.batch, o.limit, o.window, took.Round(time.Millisecond), float64(o.rows)/took.Seconds(), least,
		hits.n.Load(), count(), st.Rows)
	if took < least {
		t.Fatalf("drained in %v, faster than the sync policy allows (%v)", took, least)
	}
	if got := count(); got != st.Rows || got != int64(o.rows) {
		t.Fatalf("HQ holds %d transactions, the journal %d, want %d", got, st.Rows, o.rows)
	}
	if n := hits.n.Load(); n < int64(batches) {
		t.Fatalf("%d hits of the sync budget for %d batches", n, batches)
	}

	// The manifests of the seven days: HQ's figures match the journal's.
	manifests := 0
	for _, d := range days {
		ms, err := replay.Manifests(ctx, j, store, d)
		if err != nil {
			t.Fatal(err)
		}
		manifests += len(ms)
		if err := r.PublishManifest(ctx, d); err != nil {
			t.Fatalf("manifest of %s: %v", d, err)
		}
	}
	testenv.WaitFor(t, time.Minute, "HQ to store the manifests", func() bool {
		return storedManifests(t, hqCfg.Database, store) == manifests
	})
	rep, err := hqStore.Completeness(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Incomplete) != 0 {
		t.Fatalf("days incomplete at HQ after the drain: %+v", rep.Incomplete)
	}
}

// countingLimiter counts the hits of the store-wide sync budget.
type countingLimiter struct {
	l *ratelimit.Limiter
	n atomic.Int64
}

func (c *countingLimiter) WaitStoreSync(ctx context.Context) error {
	c.n.Add(1)
	return c.l.WaitStoreSync(ctx)
}

// buildOutageJournal journals o.rows sales of store, created evenly over
// o.days days ending now, in the shape the edge journals them (bodies as
// the terminals got them), and returns their business days.
func buildOutageJournal(t *testing.T, j *journal.Journal, store string, o outage) []string {
	t.Helper()
	ctx := context.Background()
	end := time.Now().UTC().Truncate(time.Second)
	first := end.Add(-time.Duration(o.days) * 24 * time.Hour)
	step := time.Duration(o.days) * 24 * time.Hour / time.Duration(o.rows)
	var wg sync.WaitGroup
	var failed atomic.Value
	sem := make(chan struct{}, 128) // enough to fill the journal's group commits
	seen := sync.Map{}
	for i := 1; i <= o.rows && failed.Load() == nil; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			tx := outageSale(store, i, o.terminals, first.Add(time.Duration(i)*step))
			seen.Store(tx.BusinessDay, true)
			if err := j.Append(ctx, tx); err != nil {
				failed.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatalf("journal the outage: %v", err)
	}
	var days []string
	seen.Range(func(k, _ any) bool { days = append(days, k.(string)); return true })
	slices.Sort(days)
	return days
}

// outageSale is sale n of the outage: a one- to three-line cash or card
// sale of one of the store's tills.
func outageSale(store string, n, terminals int, at time.Time) journal.Txn {
	flow := fmt.Sprintf("1%012d", n)
	term := fmt.Sprintf("T%02d", n%terminals+1)
	tender := []string{"cash", "card", "mobile"}[n%3]
	var lines []journal.Line
	var total int64
	for k := 0; k <= n%3; k++ {
		l := journal.Line{Barcode: fmt.Sprintf("400638133%04d", (n+k)%9973), Qty: int64(k + 1), PriceCents: int64(99 + (n*7+k)%900)}
		lines = append(lines, l)
		total += l.Qty * l.PriceCents
	}
	ts := at.Format(time.RFC3339Nano)
	key := fmt.Sprintf("%s-r%d", term, n)
	body, _ := json.Marshal(map[string]any{"flow_no": flow, "store_id": store, "terminal_id": term, "kind": "sale",
		"total_cents": total, "tender": tender, "lines": lines, "receipt_no": fmt.Sprintf("R%d", n), "cashier_id": "C1",
		"created_at": ts, "occurred_at": ts})
	if _, err := wire.ParseTxn(body); err != nil {
		panic(err)
	}
	return journal.Txn{FlowNo: flow, Seq: int64(n), TerminalID: term, IdemKey: key, Fingerprint: key,
		Kind: "sale", Tender: tender, TotalCents: total, BusinessDay: at.Format("20060102"), BusinessHour: at.Format("15"),
		CreatedAt: at, Lines: lines, Body: body, Mode: journal.ModeNormal, Applied: true}
}

// storedManifests counts the manifests HQ keeps for store.
func storedManifests(t *testing.T, database, store string) int {
	t.Helper()
	u, err := hq.ParseDatabaseURL(database)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+u.Path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM manifests WHERE store_id = ?`, store).Scan(&n); err != nil {
		return 0
	}
	return n
}
