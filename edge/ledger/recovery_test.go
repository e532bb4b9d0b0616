package ledger_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// Sales made while Redis is down are journaled in this node's own flow
// range; when Redis is back they are applied to it exactly once.
func TestDegradedSalesAppliedOnceWhenRedisIsBack(t *testing.T) {
	e := newEnv(t, journal.Options{})
	if err := e.rdb.ConfigSet(e.ctx, "appendfsync", "always").Err(); err != nil {
		t.Fatal(err) // the restarted node must come back with what it acknowledged
	}
	e.putItem("A", 150, 10)
	before := e.mustSale("T01", "n1", sale1("A", 1, 150))

	e.redis.KillNode(0)
	down1, err := e.sale("T01", "d1", sale1("A", 2, 150))
	if err != nil {
		t.Fatalf("sale while Redis is down: %v", err)
	}
	if !e.l.Degraded() {
		t.Fatal("not degraded after a sale found Redis down")
	}
	down2 := e.mustSale("T02", "d2", sale1("A", 3, 150))
	for _, r := range []*ledger.Result{down1, down2} {
		if !strings.HasPrefix(r.FlowNo, "20") || len(r.FlowNo) != 16 {
			t.Fatalf("degraded flow number %q", r.FlowNo)
		}
	}
	if jt := e.journaled("T01", "d1"); jt == nil || jt.Mode != journal.ModeDegraded || jt.Applied {
		t.Fatalf("journal row of a degraded sale %+v", jt)
	}
	if it, err := e.l.Item(e.ctx, "A"); err != nil || !it.Stale {
		t.Fatalf("item while down: %+v %v", it, err)
	}
	if r, err := e.sale("T01", "d1", sale1("A", 2, 150)); err != nil || !r.Replayed || r.FlowNo != down1.FlowNo {
		t.Fatalf("replay while down: %+v %v", r, err)
	}

	e.redis.RestartNode(0)
	ctx, stop := context.WithCancel(e.ctx)
	watched := make(chan struct{})
	go func() { e.l.Watch(ctx, 50*time.Millisecond, ""); close(watched) }()
	t.Cleanup(func() { stop(); <-watched })
	deadline := time.Now().Add(10 * time.Second)
	for e.l.Degraded() {
		if time.Now().After(deadline) {
			t.Fatal("still degraded 10 s after Redis came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := e.stock("A"); got != 4 {
		t.Fatalf("stock %d, want 4 (10 − 1 − 2 − 3)", got)
	}
	if got := e.today(); got != (ledger.Totals{Sales: 3, SalesCents: 900}) {
		t.Fatalf("day totals %+v", got)
	}
	if rows, err := e.j.Unapplied(e.ctx, 10); err != nil || len(rows) != 0 {
		t.Fatalf("unapplied after recovery: %d %v", len(rows), err)
	}
	// Applying again (the next tick, another daemon) applies nothing.
	if n, err := e.l.ApplyDegraded(e.ctx); err != nil || n != 0 {
		t.Fatalf("second apply: %d %v", n, err)
	}
	if err := e.l.Repair(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.stock("A"); got != 4 {
		t.Fatalf("stock %d after applying twice, want 4", got)
	}
	// Back in normal mode; the degraded sale's key still answers its body.
	if r, err := e.sale("T01", "d1", sale1("A", 2, 150)); err != nil || !r.Replayed || string(r.Body) != string(down1.Body) {
		t.Fatalf("replay after recovery: %+v %v", r, err)
	}
	after := e.mustSale("T01", "n2", sale1("A", 1, 150))
	if !normalFlow.MatchString(after.FlowNo) || after.FlowNo <= before.FlowNo {
		t.Fatalf("flow numbers %s then %s", before.FlowNo, after.FlowNo)
	}
}

// A Redis that lost acknowledged writes (a master restarted empty and its
// item master loaded again) is repaired from the journal at start: the
// sales are applied again and the flow sequence never goes back.
func TestStartRepairsRedisThatLostWrites(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 10)
	s1 := e.mustSale("T01", "k1", sale1("A", 2, 150))
	s2 := e.mustSale("T02", "k2", sale1("A", 1, 150))
	// Marking a record COMPLETED runs after the answer; a mark landing on
	// the emptied Redis would leave a record without its effects.
	e.waitCompleted("T01:k1", "T02:k2")
	if err := e.rdb.FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	e.putItem("A", 150, 10)

	e.restart(journal.Options{})
	id, err := e.l.Start(e.ctx)
	if err != nil || id == "" {
		t.Fatalf("start: %q %v", id, err)
	}
	if e.l.Degraded() {
		t.Fatal("degraded after a successful start")
	}
	if got := e.stock("A"); got != 7 {
		t.Fatalf("stock %d, want 7", got)
	}
	if got := e.today(); got != (ledger.Totals{Sales: 2, SalesCents: 450}) {
		t.Fatalf("day totals %+v", got)
	}
	s3 := e.mustSale("T01", "k3", sale1("A", 1, 150))
	if s3.FlowNo <= s2.FlowNo || s3.FlowNo <= s1.FlowNo {
		t.Fatalf("flow number %s after %s and %s: the sequence went back", s3.FlowNo, s1.FlowNo, s2.FlowNo)
	}
	if r, err := e.sale("T01", "k1", sale1("A", 2, 150)); err != nil || !r.Replayed || r.FlowNo != s1.FlowNo {
		t.Fatalf("replay after repair: %+v %v", r, err)
	}
	if got := e.stock("A"); got != 6 {
		t.Fatalf("stock %d, want 6", got)
	}
}

// A sale Redis applied but the journal could not take (here: the journal
// is full) is answered 503 journal_unavailable and recorded nowhere
// (issue 22 finding 5): Redis's stock and day totals are as before it,
// the next daemon's start does not journal it (so HQ never receives it),
// and only a retry with the same key records it, once, afresh.
func TestJournalRefusedSaleIsNeverRecorded(t *testing.T) {
	e := newEnv(t, journal.Options{MaxPageCount: 30})
	e.putItem("A", 150, 100000)
	var lost string
	var stock int64
	var day ledger.Totals
	for i := 0; lost == ""; i++ {
		key := fmt.Sprintf("k%d", i)
		stock, day = e.stock("A"), e.today()
		if _, err := e.sale("T01", key, sale1("A", 1, 150)); err != nil {
			le := refusal(t, err)
			if le.Code != "journal_unavailable" || le.Kind != ledger.KindUnavailable {
				t.Fatalf("sale %d: %v", i, le)
			}
			lost = key
		}
		if i > 5000 {
			t.Fatal("the journal never filled up")
		}
	}
	if got := e.stock("A"); got != stock {
		t.Fatalf("stock after the 503: %d, want %d (as before the sale)", got, stock)
	}
	if got := e.today(); got != day {
		t.Fatalf("day totals after the 503: %+v, want %+v", got, day)
	}

	e.restart(journal.Options{})
	if _, err := e.l.Start(e.ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	if jt := e.journaled("T01", lost); jt != nil {
		t.Fatalf("start-up recovery journaled the sale answered 503: %+v", jt)
	}
	if got := e.stock("A"); got != stock {
		t.Fatalf("stock after the restart: %d, want %d", got, stock)
	}
	r, err := e.sale("T01", lost, sale1("A", 1, 150))
	if err != nil || r.Replayed {
		t.Fatalf("retry: %+v %v", r, err)
	}
	jt := e.journaled("T01", lost)
	if jt == nil || jt.Mode != journal.ModeNormal || jt.FlowNo != r.FlowNo {
		t.Fatalf("journal row of the retried sale: %+v", jt)
	}
	again, err := e.sale("T01", lost, sale1("A", 1, 150))
	if err != nil || !again.Replayed || again.FlowNo != r.FlowNo {
		t.Fatalf("second retry: %+v %v", again, err)
	}
	if got := e.stock("A"); got != stock-1 {
		t.Fatalf("stock after the retry: %d, want %d (sold once)", got, stock-1)
	}
	want := day
	want.Sales, want.SalesCents = day.Sales+1, day.SalesCents+150
	if got := e.today(); got.Sales != want.Sales || got.SalesCents != want.SalesCents {
		t.Fatalf("day totals after the retry: %+v, want %+v", got, want)
	}
}

// A sale a crashed daemon left applied in Redis only (state PROCESSING of
// another owner, no journal row: here its journal was lost) is journaled
// by the next start on the business day (and hour) of its occurred_at, as
// Redis counted it, not on the day of its recovery: else reconciliation
// would move it between days.
func TestRecoveredSaleKeepsItsBusinessDay(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 100000)
	at := time.Now().UTC().Add(-26 * time.Hour)
	own := e.jPath
	e.jPath = filepath.Join(t.TempDir(), "lost.db") // the crashed daemon's journal, lost
	e.restart(journal.Options{})
	req := sale1("A", 1, 150)
	req.OccurredAt = new(at.Format(time.RFC3339))
	e.mustSale("T01", "lost", req)
	e.waitCompleted("T01:lost")
	names, err := e.rdb.Keys(e.ctx, "*idem:T01:lost").Result()
	if err != nil || len(names) != 1 {
		t.Fatalf("record: %v %v", names, err)
	}
	if err := e.rdb.HSet(e.ctx, names[0], "state", "PROCESSING", "owner", "crashed", "at", "0").Err(); err != nil {
		t.Fatal(err)
	}
	e.jPath = own
	e.restart(journal.Options{})
	if _, err := e.l.Start(e.ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	jt := e.journaled("T01", "lost")
	if jt == nil || jt.Mode != journal.ModeRecovered {
		t.Fatalf("journal row of the sale left in Redis: %+v", jt)
	}
	if day, hour := at.Format("20060102"), at.Format("15"); jt.BusinessDay != day || jt.BusinessHour != hour {
		t.Fatalf("recovered sale filed on %s hour %s, want %s hour %s (its occurred_at)", jt.BusinessDay, jt.BusinessHour, day, hour)
	}
}

// A till that hangs up (its request's context cancelled) is not a Redis
// outage: the store stays in normal mode and nothing is recorded.
func TestCancelledRequestKeepsNormalMode(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 10)
	cancelled, cancel := context.WithCancel(e.ctx)
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"item", func() error { _, err := e.l.Item(cancelled, "A"); return err }},
		{"put item", func() error {
			return e.l.PutItem(cancelled, ledger.Item{Barcode: "A", Name: "x", PriceCents: 1, Stock: 1})
		}},
		{"payment token", func() error { _, err := e.l.NewToken(cancelled, "T01"); return err }},
		{"sale", func() error { _, err := e.l.Sale(cancelled, "T01", "c1", sale1("A", 1, 150)); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			if err := c.call(); err == nil {
				t.Fatal("a cancelled call succeeded")
			}
			if e.l.Degraded() {
				t.Fatal("a cancelled call switched the store to degraded mode")
			}
		})
	}
	if got := e.stock("A"); got != 10 {
		t.Fatalf("stock %d, want 10", got)
	}
	if jt := e.journaled("T01", "c1"); jt != nil {
		t.Fatalf("a cancelled sale was journaled: %+v", jt)
	}
}

// The start-up scan for sales a crash left in Redis only reads the
// idempotency records by the page: its round trips grow with the pages,
// not with the records. It was one HGETALL a record, and a store's
// records of the last two days (the kill loop's 30,000) held a restarted
// daemon in degraded mode for tens of seconds. The orphan among them is
// still found and journaled, the completed records left as they were.
// The reconciliation's Unjournaled reads by the same pages.
func TestRecoverOrphansReadsRecordsByThePage(t *testing.T) {
	const records = 3000
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 100000)
	own := e.jPath
	e.jPath = filepath.Join(t.TempDir(), "lost.db") // the crashed daemon's journal, lost
	e.restart(journal.Options{})
	e.mustSale("T01", "lost", sale1("A", 1, 150))
	e.waitCompleted("T01:lost")
	names, err := e.rdb.Keys(e.ctx, "*idem:T01:lost").Result()
	if err != nil || len(names) != 1 {
		t.Fatalf("record: %v %v", names, err)
	}
	rec, err := e.rdb.HGetAll(e.ctx, names[0]).Result()
	if err != nil || rec["state"] != "COMPLETED" {
		t.Fatalf("record %v: %v", rec, err)
	}
	// Completed sales of another terminal: copies of this record.
	prefix := strings.TrimSuffix(names[0], "T01:lost")
	pipe := e.rdb.Pipeline()
	for i := range records {
		pipe.HSet(e.ctx, fmt.Sprintf("%sT02:done%d", prefix, i), rec)
	}
	if _, err := pipe.Exec(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.HSet(e.ctx, names[0], "state", "PROCESSING", "owner", "crashed", "at", "0").Err(); err != nil {
		t.Fatal(err)
	}
	e.jPath = own
	e.restart(journal.Options{})
	var rt testenv.RoundTrips
	e.rdb.AddHook(&rt)
	// The reconciliation's look for sales Redis holds and the journal
	// lacks takes the same pages, and finds the one.
	pend, err := e.l.Unjournaled(e.ctx)
	if err != nil || len(pend) != 1 || len(pend[0].Barcodes) != 1 || pend[0].Barcodes[0] != "A" {
		t.Fatalf("unjournaled %+v (%v), want the one orphan's sale of A", pend, err)
	}
	if trips := rt.N(); trips > records/50 {
		t.Fatalf("%d round trips to find the unjournaled among %d records, want at most %d", trips, records, records/50)
	}
	rt.Reset()
	found, err := e.l.RecoverOrphans(e.ctx)
	if err != nil || found != 1 {
		t.Fatalf("recovered %d sales (%v), want the one orphan", found, err)
	}
	if jt := e.journaled("T01", "lost"); jt == nil || jt.Mode != journal.ModeRecovered {
		t.Fatalf("journal row of the sale left in Redis: %+v", jt)
	}
	// About seven pages of 500 (a SCAN and a pipeline each), then the
	// orphan's own reads and writes.
	if trips := rt.N(); trips > records/50 {
		t.Fatalf("%d round trips to scan %d records, want at most %d", trips, records, records/50)
	}
	if st, err := e.rdb.HGet(e.ctx, prefix+"T02:done7", "state").Result(); err != nil || st != "COMPLETED" {
		t.Fatalf("a completed record after the scan: %q %v", st, err)
	}
}

// Two daemons share a store's Redis (node_id 0 and 1, each its own
// journal). When one starts, its scan for the sales a crash left in Redis
// only must leave the other's records alone: a sale in flight there is
// journaled by that daemon an instant later, and an old one is most
// likely journaled there already with its COMPLETED mark lost (the mark
// is best effort); a second journal row ("recovered") would put the sale
// in two journals. A dead process's records of this node are still
// taken (it is the only process of its node), and those of owners named
// before owners carried their node, as before.
func TestRecoverOrphansLeavesAnotherNodesRecords(t *testing.T) {
	e := newProxiedEnv(t, journal.Options{}) // node 0; its Redis answers held below
	e.putItem("A", 150, 100)
	direct := e.redis.NodeClient(0)
	peer := e.peer(1)

	// Records left PROCESSING: sales of node 0, journaled there, then
	// made PROCESSING under another owner (peer's journal lacks them).
	now := time.Now().UnixMilli()
	dead := []struct {
		key, owner string
		atMs       int64
		recovered  bool
	}{
		{"other-node-young", "n0-0123456789abcdef", now, false},
		{"other-node-old", "n0-0123456789abcdef", now - 10_000, false},
		{"own-node-young", "n1-0123456789abcdef", now, true},
		{"unnamed-node-young", "crashed", now, true},
	}
	for _, d := range dead {
		e.mustSale("T02", d.key, sale1("A", 1, 150))
		e.waitCompleted("T02:" + d.key)
		names, err := direct.Keys(e.ctx, "*idem:T02:"+d.key).Result()
		if err != nil || len(names) != 1 {
			t.Fatalf("record of %s: %v %v", d.key, names, err)
		}
		if err := direct.HSet(e.ctx, names[0], "state", "PROCESSING", "owner", d.owner, "at", strconv.FormatInt(d.atMs, 10)).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// A sale of node 0 in flight: its script has run, its answer is held.
	e.proxy.Set(testenv.DelayAnswers, 700*time.Millisecond)
	sold := make(chan error, 1)
	go func() {
		_, err := e.sale("T01", "in-flight", sale1("A", 1, 150))
		sold <- err
	}()
	testenv.WaitFor(t, 5*time.Second, "the in-flight sale's record PROCESSING in Redis", func() bool {
		names, err := direct.Keys(e.ctx, "*idem:T01:in-flight").Result()
		if err != nil || len(names) != 1 {
			return false
		}
		st, _ := direct.HGet(e.ctx, names[0], "state").Result()
		return st == "PROCESSING"
	})
	found, err := peer.l.RecoverOrphans(e.ctx)
	if err != nil {
		t.Fatalf("recover orphans: %v", err)
	}
	if jt := peer.journaled("T01", "in-flight"); jt != nil {
		t.Fatalf("node 1's start-up scan journaled node 0's sale in flight: flow %s, mode %s", jt.FlowNo, jt.Mode)
	}
	if err := <-sold; err != nil {
		t.Fatalf("the sale in flight: %v", err)
	}
	e.proxy.Set(testenv.Pass, 0)
	if jt := e.journaled("T01", "in-flight"); jt == nil || jt.Mode != journal.ModeNormal {
		t.Fatalf("node 0's journal row of its sale: %v", jt != nil && jt.Mode == journal.ModeNormal)
	}

	want := 0
	for _, d := range dead {
		jt := peer.journaled("T02", d.key)
		if d.recovered {
			want++
			if jt == nil || jt.Mode != journal.ModeRecovered {
				t.Errorf("%s (owner %s): node 1's journal holds it: %v, want it recovered", d.key, d.owner, jt != nil)
			}
		} else if jt != nil {
			t.Errorf("%s (owner %s): journaled by node 1 (mode %s), want it left to its node", d.key, d.owner, jt.Mode)
		}
	}
	if found != want {
		t.Errorf("recovered %d sales, want %d", found, want)
	}
}

// A till's retry that reaches the other daemon of the store (two on one
// Redis) for a sale the first one completed is answered the stored sale,
// and not journaled a second time: the daemon that marked it COMPLETED
// journaled it first, and each journal holds its own node's sales. A
// second row would put the sale in two journals.
func TestRetryOnAnotherNodeOfACompletedSaleIsNotJournaledTwice(t *testing.T) {
	e := newEnv(t, journal.Options{}) // node 0
	e.putItem("A", 150, 100)
	peer := e.peer(1)
	first := e.mustSale("T01", "k", sale1("A", 1, 150))
	e.waitCompleted("T01:k")
	again, err := peer.sale("T01", "k", sale1("A", 1, 150))
	if err != nil || !again.Replayed || again.FlowNo != first.FlowNo || string(again.Body) != string(first.Body) {
		t.Fatalf("retry on node 1: %+v, %v; want node 0's sale %s replayed", again, err, first.FlowNo)
	}
	if jt := peer.journaled("T01", "k"); jt != nil {
		t.Fatalf("node 1 journaled node 0's completed sale (mode %s)", jt.Mode)
	}
	if got := e.stock("A"); got != 99 {
		t.Fatalf("stock %d, want 99 (the sale once)", got)
	}
}

// A sale journaled whose COMPLETED mark Redis lost (the mark is best
// effort, written after the journal commit; a failover drops the last
// writes) is marked again by the next repair's walk over the recent
// journal rows. Left PROCESSING, a till's retry on the store's other
// daemon, 5 s on, would journal it there too; marked, it is answered.
func TestRepairMarksJournaledSalesStillProcessing(t *testing.T) {
	e := newEnv(t, journal.Options{}) // node 0
	e.putItem("A", 150, 100)
	peer := e.peer(1)
	first := e.mustSale("T01", "k", sale1("A", 1, 150))
	e.waitCompleted("T01:k")
	names, err := e.rdb.Keys(e.ctx, "*idem:T01:k").Result()
	if err != nil || len(names) != 1 {
		t.Fatalf("record: %v %v", names, err)
	}
	lost := strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10)
	if err := e.rdb.HSet(e.ctx, names[0], "state", "PROCESSING", "at", lost).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.l.Repair(e.ctx); err != nil {
		t.Fatalf("repair: %v", err)
	}
	if st, err := e.rdb.HGet(e.ctx, names[0], "state").Result(); err != nil || st != "COMPLETED" {
		t.Fatalf("record after the repair: %q %v, want COMPLETED", st, err)
	}
	again, err := peer.sale("T01", "k", sale1("A", 1, 150))
	if err != nil || !again.Replayed || again.FlowNo != first.FlowNo {
		t.Fatalf("retry on node 1: %+v, %v; want node 0's sale %s replayed", again, err, first.FlowNo)
	}
	if jt := peer.journaled("T01", "k"); jt != nil {
		t.Fatalf("node 1 journaled node 0's sale (mode %s)", jt.Mode)
	}
	if got := e.stock("A"); got != 99 {
		t.Fatalf("stock %d, want 99 (the sale once)", got)
	}
}

// A COMPLETED mark whose pipeline fails on the link (Redis out of reach
// for a moment, after the sale was journaled and answered) is kept and
// sent with the next sale, not dropped. Dropped, the record stayed
// PROCESSING for its 48 h, and a till's retry on the store's other
// daemon, 5 s on, journaled the sale there too (docs/durability.md).
func TestCompletionMarkLostOnTheLinkGoesWithTheNextSale(t *testing.T) {
	e := newProxiedEnv(t, journal.Options{})
	e.putItem("A", 150, 100)
	direct := e.redis.NodeClient(0)
	state := func(key string) string { return e.recordState(direct, "T01:"+key) }
	var key string
	for try := 0; ; try++ {
		key = fmt.Sprintf("k%d", try)
		e.mustSale("T01", key, sale1("A", 1, 150))
		// The mark goes completeDelay (5 ms) after the answer, in a
		// pipeline of its own: cut the link before, long enough for that
		// pipeline to fail (the proxied client's ReadTimeout, 2 s).
		e.proxy.Set(testenv.BlackHole, 0)
		time.Sleep(2500 * time.Millisecond)
		e.proxy.Set(testenv.Pass, 0)
		if state(key) == "PROCESSING" {
			break
		}
		if try == 2 {
			t.Fatal("the mark reached Redis before the link was cut, three times")
		}
	}
	e.mustSale("T01", "next", sale1("A", 1, 150))
	if st := state(key); st != "COMPLETED" {
		t.Fatalf("record of %s after the next sale: %s, want COMPLETED (the mark lost on the link sent again)", key, st)
	}
	if st := state("next"); st != "PROCESSING" && st != "COMPLETED" {
		t.Fatalf("record of the next sale: %s", st)
	}
}
