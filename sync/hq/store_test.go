package hq_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// backend opens a fresh, empty database of one kind for a test.
type backend struct {
	name string
	dsn  func(t *testing.T) string // a `database` URL of a fresh database
}

// backends are the databases every suite runs against. The PostgreSQL
// cluster is started once for the calling test, on first use.
func backends(t *testing.T) []backend {
	var pg *testenv.Postgres
	return []backend{
		{"sqlite", func(t *testing.T) string {
			return "sqlite://" + filepath.Join(t.TempDir(), "hq.db")
		}},
		{"postgres", func(t *testing.T) string {
			if pg == nil {
				pg = testenv.StartPostgres(t)
			}
			return pg.NewDatabase(t)
		}},
	}
}

func openStore(t *testing.T, dsn string, opts hqdb.StoreOptions) hqdb.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := hq.OpenStore(ctx, dsn, opts)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStore runs the Store contract suite against every implementation.
func TestStore(t *testing.T) {
	pg := testenv.StartPostgres(t)
	impls := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "hq.db") }},
		{"postgres", func(t *testing.T) string { return pg.NewDatabase(t) }},
	}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			open := func(t *testing.T, opts hqdb.StoreOptions) (hqdb.Store, string) {
				dsn := impl.dsn(t)
				return openStore(t, dsn, opts), dsn
			}
			t.Run("InsertOnce", func(t *testing.T) { testInsertOnce(t, open) })
			t.Run("DuplicateAnyAge", func(t *testing.T) { testDuplicateAnyAge(t, open) })
			t.Run("Conflict", func(t *testing.T) { testConflict(t, open) })
			t.Run("BatchAtomic", func(t *testing.T) { testBatchAtomic(t, open) })
			t.Run("Have", func(t *testing.T) { testHave(t, open) })
			t.Run("Watermark", func(t *testing.T) { testWatermark(t, open) })
			t.Run("Completeness", func(t *testing.T) { testCompleteness(t, open) })
			t.Run("DeletedRowsLeaveTheDayShort", func(t *testing.T) { testDeletedRowsLeaveTheDayShort(t, open) })
			t.Run("ManifestAndHeartbeatNewestWins", func(t *testing.T) { testNewestWins(t, open) })
			t.Run("Reopen", func(t *testing.T) { testReopen(t, open) })
			t.Run("StockAdjustmentOnce", func(t *testing.T) { testStockAdjustmentOnce(t, open) })
			t.Run("Quarantine", func(t *testing.T) { testQuarantine(t, open) })
			t.Run("Fleet", func(t *testing.T) { testFleet(t, open) })
		})
	}
}

type opener func(t *testing.T, opts hqdb.StoreOptions) (hqdb.Store, string)

var t0 = time.Date(2026, 5, 20, 10, 0, 0, 0, time.UTC)

// sale is a transaction body as the edge returns it to the terminal.
type sale struct {
	store, flow, terminal, kind string
	cents                       int64
	created                     time.Time
	tender                      string
}

func (s sale) body() []byte {
	if s.kind == "" {
		s.kind = "sale"
	}
	if s.terminal == "" {
		s.terminal = "T01"
	}
	if s.tender == "" {
		s.tender = "cash"
	}
	if s.created.IsZero() {
		s.created = t0
	}
	b, _ := json.Marshal(map[string]any{
		"flow_no": s.flow, "store_id": s.store, "terminal_id": s.terminal, "kind": s.kind,
		"total_cents": s.cents, "tender": s.tender,
		"lines":      []map[string]any{{"barcode": "6901234567890", "qty": 1, "price_cents": s.cents}},
		"created_at": s.created.Format(time.RFC3339), "occurred_at": s.created.Format(time.RFC3339),
	})
	return b
}

func (s sale) msg(t testing.TB, received time.Time) hqdb.Msg {
	t.Helper()
	m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, wire.TxnSubject(wire.DefaultSubjectPrefix, s.store), wire.SchemaV1, s.body(), received)
	if err != nil {
		t.Fatalf("decode %s/%s: %v", s.store, s.flow, err)
	}
	return m
}

func manifestMsg(t testing.TB, mf wire.Manifest, received time.Time) hqdb.Msg {
	t.Helper()
	b, _ := json.Marshal(mf)
	m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, wire.ManifestSubject(wire.DefaultSubjectPrefix, mf.StoreID), "", b, received)
	if err != nil {
		t.Fatalf("decode manifest: %v", err)
	}
	return m
}

func heartbeatMsg(t testing.TB, hb wire.Heartbeat, received time.Time) hqdb.Msg {
	t.Helper()
	b, _ := json.Marshal(hb)
	m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, wire.HeartbeatSubject(wire.DefaultSubjectPrefix, hb.StoreID), "", b, received)
	if err != nil {
		t.Fatalf("decode heartbeat: %v", err)
	}
	return m
}

func insert(t *testing.T, s hqdb.Store, msgs ...hqdb.Msg) []hqdb.Outcome {
	t.Helper()
	out, err := s.InsertBatch(context.Background(), msgs)
	if err != nil {
		t.Fatalf("InsertBatch: %v", err)
	}
	if len(out) != len(msgs) {
		t.Fatalf("InsertBatch: %d outcomes for %d messages", len(out), len(msgs))
	}
	return out
}

func wantOutcomes(t *testing.T, got []hqdb.Outcome, want ...hqdb.Outcome) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("outcomes = %v, want %v", got, want)
	}
}

func watermark(t *testing.T, s hqdb.Store, store string) hqdb.Watermark {
	t.Helper()
	w, err := s.Watermark(context.Background(), store)
	if err != nil {
		t.Fatalf("Watermark(%s): %v", store, err)
	}
	return w
}

func testInsertOnce(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{})
	a := sale{store: "S001", flow: "1", cents: 700}
	b := sale{store: "S001", flow: "2", cents: 350, kind: "refund"}
	wantOutcomes(t, insert(t, s, a.msg(t, t0), b.msg(t, t0)), hqdb.Inserted, hqdb.Inserted)
	got, err := s.Transaction(context.Background(), "S001", "1")
	if err != nil || string(got) != string(a.body()) {
		t.Fatalf("Transaction = %s, %v; want the body as received %s", got, err, a.body())
	}
	if _, err := s.Transaction(context.Background(), "S001", "3"); !errors.Is(err, hqdb.ErrNotFound) {
		t.Fatalf("Transaction of an unknown flow: %v, want ErrNotFound", err)
	}
	if w := watermark(t, s, "S001"); w.Count != 2 || w.MaxFlowNo != "2" {
		t.Fatalf("watermark = %+v", w)
	}
}

func testDuplicateAnyAge(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{})
	a := sale{store: "S001", flow: "10", cents: 700}
	wantOutcomes(t, insert(t, s, a.msg(t, t0)), hqdb.Inserted)
	// A week later, again, and twice within one batch.
	later := t0.Add(7 * 24 * time.Hour)
	b := sale{store: "S001", flow: "11", cents: 100}
	wantOutcomes(t, insert(t, s, a.msg(t, later), b.msg(t, later), b.msg(t, later)),
		hqdb.Duplicate, hqdb.Inserted, hqdb.Duplicate)
	// The same JSON value written with other key order and spacing is the same body.
	var v map[string]any
	json.Unmarshal(a.body(), &v)
	pretty, _ := json.MarshalIndent(v, "", "  ")
	m := a.msg(t, later)
	m.Body = pretty
	wantOutcomes(t, insert(t, s, m), hqdb.Duplicate)
	if w := watermark(t, s, "S001"); w.Count != 2 {
		t.Fatalf("count = %d after duplicates, want 2", w.Count)
	}
	if c, _ := s.Conflicts(context.Background(), "S001"); len(c) != 0 {
		t.Fatalf("duplicates recorded as conflicts: %v", c)
	}
}

func testConflict(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{})
	orig := sale{store: "S001", flow: "5", cents: 700}
	other := sale{store: "S001", flow: "5", cents: 900, terminal: "T02"} // a replaced box reissued flow 5
	wantOutcomes(t, insert(t, s, orig.msg(t, t0)), hqdb.Inserted)
	wantOutcomes(t, insert(t, s, other.msg(t, t0.Add(time.Minute))), hqdb.Conflict)
	// The same conflicting body again is still a conflict, recorded once;
	// a conflict and its original inside one batch behave the same.
	third := sale{store: "S001", flow: "6", cents: 1}
	thirdOther := sale{store: "S001", flow: "6", cents: 2}
	wantOutcomes(t, insert(t, s, other.msg(t, t0.Add(2*time.Minute)), third.msg(t, t0), thirdOther.msg(t, t0.Add(3*time.Minute))),
		hqdb.Conflict, hqdb.Inserted, hqdb.Conflict)

	got, _ := s.Transaction(context.Background(), "S001", "5")
	if string(got) != string(orig.body()) {
		t.Fatalf("conflict overwrote the stored body: %s", got)
	}
	cs, err := s.Conflicts(context.Background(), "S001")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].FlowNo != "5" || !hq.SameJSON(cs[0].Body, other.body()) || cs[1].FlowNo != "6" {
		t.Fatalf("conflicts = %+v", cs)
	}
	if w := watermark(t, s, "S001"); w.Count != 2 {
		t.Fatalf("count = %d, want 2 (conflicts are not counted)", w.Count)
	}
}

func testBatchAtomic(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{})
	good := sale{store: "S001", flow: "1", cents: 700}
	bad := sale{store: "S001", flow: "2", cents: 1}.msg(t, t0)
	bad.Kind = 0 // cannot be stored: the whole batch must fail
	mf := manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: "20260520", Sales: 1}, t0)
	if _, err := s.InsertBatch(context.Background(), []hqdb.Msg{good.msg(t, t0), mf, bad}); err == nil {
		t.Fatal("InsertBatch with an unstorable message succeeded")
	}
	if have, _ := s.Have(context.Background(), "S001", []string{"1", "2"}); len(have) != 0 {
		t.Fatalf("a failed batch left rows behind: %v", have)
	}
	if w := watermark(t, s, "S001"); w.Count != 0 || !w.LastSeenAt.IsZero() {
		t.Fatalf("a failed batch moved the watermark: %+v", w)
	}
	rep, _ := s.Completeness(context.Background(), t0)
	if len(rep.Incomplete) != 0 {
		t.Fatalf("a failed batch left a manifest: %+v", rep)
	}
	// A cancelled context stores nothing either.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.InsertBatch(ctx, []hqdb.Msg{good.msg(t, t0)}); err == nil {
		t.Fatal("InsertBatch with a cancelled context succeeded")
	}
	wantOutcomes(t, insert(t, s, good.msg(t, t0)), hqdb.Inserted)
}

func testHave(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{})
	var msgs []hqdb.Msg
	var asked []string
	for i := 1; i <= 1200; i++ {
		f := fmt.Sprint(i)
		asked = append(asked, f)
		if i%3 != 0 {
			msgs = append(msgs, sale{store: "S001", flow: f, cents: 1}.msg(t, t0))
		}
	}
	msgs = append(msgs, sale{store: "S002", flow: "3", cents: 1}.msg(t, t0))
	insert(t, s, msgs...)
	have, err := s.Have(context.Background(), "S001", append(asked, "1", "99999"))
	if err != nil {
		t.Fatal(err)
	}
	if len(have) != 800 || have[0] != "1" || have[1] != "2" || have[2] != "4" || slices.Contains(have, "3") {
		t.Fatalf("Have: %d flows, first %v", len(have), have[:min(5, len(have))])
	}
	if have, _ := s.Have(context.Background(), "S002", []string{"1", "3"}); !slices.Equal(have, []string{"3"}) {
		t.Fatalf("Have(S002) = %v", have)
	}
	if have, err := s.Have(context.Background(), "S003", nil); err != nil || len(have) != 0 {
		t.Fatalf("Have(S003, nil) = %v, %v", have, err)
	}
	// A transaction HQ quarantined is held: it reached HQ, a store
	// resending it (delivery confirmation) would change nothing.
	q := sale{store: "S003", flow: "8", terminal: "T04", cents: 1000}.msg(t, t0)
	hq.Screen(&q, 999)
	wantOutcomes(t, insert(t, s, q), hqdb.Quarantined)
	if have, err := s.Have(context.Background(), "S003", []string{"7", "8"}); err != nil || !slices.Equal(have, []string{"8"}) {
		t.Fatalf("Have(S003) with flow 8 quarantined = %v, %v", have, err)
	}
}

func testWatermark(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{})
	if w := watermark(t, s, "S001"); w.Count != 0 || w.MaxFlowNo != "" || w.StoreID != "S001" {
		t.Fatalf("watermark of an unknown store = %+v", w)
	}
	insert(t, s,
		sale{store: "S001", flow: "9", cents: 1, created: t0}.msg(t, t0),
		sale{store: "S001", flow: "100", cents: 1, created: t0.Add(-time.Hour)}.msg(t, t0),
		sale{store: "S002", flow: "7", cents: 1}.msg(t, t0))
	insert(t, s,
		sale{store: "S001", flow: "10", cents: 1, created: t0.Add(time.Minute)}.msg(t, t0.Add(time.Second)),
		sale{store: "S001", flow: "9", cents: 1, created: t0}.msg(t, t0.Add(2*time.Second))) // duplicate
	w := watermark(t, s, "S001")
	if w.Count != 3 || w.MaxFlowNo != "100" {
		t.Fatalf("watermark = %+v, want 3 rows, max flow 100 (numeric order)", w)
	}
	if !w.LastCreatedAt.Equal(t0.Add(time.Minute)) || !w.LastReceivedAt.Equal(t0.Add(time.Second)) ||
		!w.LastSeenAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("watermark times = %+v", w)
	}
	ws, err := s.Watermarks(context.Background())
	if err != nil || len(ws) != 2 || ws[0].StoreID != "S001" || ws[1].StoreID != "S002" || ws[1].Count != 1 {
		t.Fatalf("Watermarks = %+v, %v", ws, err)
	}
}

func testCompleteness(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{SilentAfter: 5 * time.Minute})
	day := time.Date(2026, 5, 20, 9, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	insert(t, s,
		sale{store: "S001", flow: "1", terminal: "T01", cents: 700, created: day}.msg(t, t0),
		sale{store: "S001", flow: "2", terminal: "T01", cents: 300, created: day}.msg(t, t0),
		sale{store: "S001", flow: "3", terminal: "T01", cents: 300, kind: "refund", created: day}.msg(t, t0),
		sale{store: "S001", flow: "4", terminal: "T02", cents: 50, created: day}.msg(t, t0),
		// Another day, local date 20260521 although 2026-05-20 in UTC.
		sale{store: "S001", flow: "5", terminal: "T01", cents: 5, created: time.Date(2026, 5, 21, 0, 30, 0, 0, day.Location())}.msg(t, t0),
		sale{store: "S002", flow: "1", terminal: "T01", cents: 10, created: day}.msg(t, t0),
	)
	insert(t, s,
		// complete
		manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: "20260520", Sales: 2, SalesCents: 1000, Refunds: 1, RefundCents: 300}, t0),
		manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: "20260521", Sales: 1, SalesCents: 5}, t0),
		// one sale missing at HQ
		manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T02", Date: "20260520", Sales: 2, SalesCents: 100}, t0),
		// nothing at all stored for this terminal
		manifestMsg(t, wire.Manifest{StoreID: "S002", TerminalID: "T03", Date: "20260520", Refunds: 1, RefundCents: 20}, t0),
		// S002 says its journal keeps 30 days: completeness says so
		// beside its incomplete day, for HQ to judge past retention by.
		heartbeatMsg(t, wire.Heartbeat{StoreID: "S002", SentAt: t0.Add(10 * time.Minute).Format(time.RFC3339),
			HeartbeatFormat: wire.HeartbeatFormat2, JournalRetentionDays: 30}, t0.Add(10*time.Minute)),
		heartbeatMsg(t, wire.Heartbeat{StoreID: "S003", SentAt: t0.Format(time.RFC3339)}, t0),
	)
	rep, err := s.Completeness(context.Background(), t0.Add(12*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	want := []hqdb.DayDiff{
		{StoreID: "S001", TerminalID: "T02", Date: "20260520", Manifest: hqdb.Totals{Sales: 2, SalesCents: 100}, Stored: hqdb.Totals{Sales: 1, SalesCents: 50}},
		{StoreID: "S002", TerminalID: "T03", Date: "20260520", Manifest: hqdb.Totals{Refunds: 1, RefundCents: 20}, JournalRetentionDays: 30},
	}
	if !slices.Equal(rep.Incomplete, want) {
		t.Fatalf("incomplete = %+v\nwant %+v", rep.Incomplete, want)
	}
	// S001 and S003 last seen at t0, 12 min ago; S002 2 min ago.
	if len(rep.Silent) != 2 || rep.Silent[0].StoreID != "S001" || rep.Silent[1].StoreID != "S003" ||
		rep.Silent[0].SilentSeconds != 720 || !rep.Silent[1].LastSeenAt.Equal(t0) {
		t.Fatalf("silent = %+v", rep.Silent)
	}
	// The missing sale arrives: the day is complete.
	insert(t, s, sale{store: "S001", flow: "6", terminal: "T02", cents: 50, created: day}.msg(t, t0.Add(11*time.Minute)))
	rep, _ = s.Completeness(context.Background(), t0.Add(12*time.Minute))
	if len(rep.Incomplete) != 1 || rep.Incomplete[0].StoreID != "S002" || len(rep.Silent) != 1 {
		t.Fatalf("after the missing sale: %+v", rep)
	}
}

// testDeletedRowsLeaveTheDayShort: rows of a complete day deleted by
// hand from transactions (HQ lost them) make the day incomplete by what
// they held, and stored again (the store resends them) it is complete:
// counted once, not twice.
func testDeletedRowsLeaveTheDayShort(t *testing.T, open opener) {
	s, dsn := open(t, hqdb.StoreOptions{})
	ctx := context.Background()
	rows := []sale{
		{store: "S001", flow: "1", cents: 700},
		{store: "S001", flow: "2", cents: 300},
		{store: "S001", flow: "3", cents: 200, kind: "refund"},
	}
	for _, r := range rows {
		insert(t, s, r.msg(t, t0))
	}
	insert(t, s, manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: "20260520", Sales: 2, SalesCents: 1000, Refunds: 1, RefundCents: 200}, t0))
	if rep, err := s.Completeness(ctx, t0); err != nil || len(rep.Incomplete) != 0 {
		t.Fatalf("before the loss: %+v %v", rep.Incomplete, err)
	}
	execSQL(t, dsn, `DELETE FROM transactions WHERE store_id = 'S001' AND flow_no IN ('2', '3')`)
	rep, err := s.Completeness(ctx, t0)
	want := []hqdb.DayDiff{{StoreID: "S001", TerminalID: "T01", Date: "20260520",
		Manifest: hqdb.Totals{Sales: 2, SalesCents: 1000, Refunds: 1, RefundCents: 200}, Stored: hqdb.Totals{Sales: 1, SalesCents: 700}}}
	if err != nil || !slices.Equal(rep.Incomplete, want) {
		t.Fatalf("after deleting 2 rows: %+v %v\nwant %+v", rep.Incomplete, err, want)
	}
	if w := watermark(t, s, "S001"); w.Count != 1 {
		t.Errorf("txn_count %d after deleting 2 of 3 rows, want 1", w.Count)
	}
	wantOutcomes(t, insert(t, s, rows[1].msg(t, t0.Add(time.Hour)), rows[2].msg(t, t0.Add(time.Hour))), hqdb.Inserted, hqdb.Inserted)
	if rep, err := s.Completeness(ctx, t0); err != nil || len(rep.Incomplete) != 0 {
		t.Fatalf("stored again: %+v %v, want the day complete", rep.Incomplete, err)
	}
}

// execSQL runs q on the database at dsn, as an operator would by hand.
func execSQL(t *testing.T, dsn, q string) {
	t.Helper()
	ctx := context.Background()
	if strings.HasPrefix(dsn, "postgres") {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return
	}
	u, err := hq.ParseDatabaseURL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+u.Path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func testNewestWins(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{})
	mf := wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: "20260520", Sales: 5, SalesCents: 500,
		SentAt: t0.Add(time.Hour).Format(time.RFC3339)}
	older := mf
	older.Sales, older.SentAt = 3, t0.Format(time.RFC3339)
	hb := wire.Heartbeat{StoreID: "S001", SentAt: t0.Format(time.RFC3339), Backlog: 7}
	wantOutcomes(t, insert(t, s, manifestMsg(t, mf, t0), heartbeatMsg(t, hb, t0)), hqdb.Inserted, hqdb.Inserted)
	wantOutcomes(t, insert(t, s, manifestMsg(t, older, t0.Add(2*time.Hour)), heartbeatMsg(t, hb, t0.Add(time.Minute))),
		hqdb.Duplicate, hqdb.Duplicate)
	rep, _ := s.Completeness(context.Background(), t0)
	if len(rep.Incomplete) != 1 || rep.Incomplete[0].Manifest.Sales != 5 {
		t.Fatalf("an older manifest replaced a newer one: %+v", rep.Incomplete)
	}
	// A redelivered heartbeat still tells the store was heard from.
	if w := watermark(t, s, "S001"); !w.LastSeenAt.Equal(t0.Add(2 * time.Hour)) {
		t.Fatalf("last seen = %v", w.LastSeenAt)
	}
}

func testReopen(t *testing.T, open opener) {
	s, dsn := open(t, hqdb.StoreOptions{})
	insert(t, s, sale{store: "S001", flow: "1", cents: 1}.msg(t, t0))
	s.Close()
	s2 := openStore(t, dsn, hqdb.StoreOptions{})
	if w := watermark(t, s2, "S001"); w.Count != 1 {
		t.Fatalf("after reopening: %+v", w)
	}
	wantOutcomes(t, insert(t, s2, sale{store: "S001", flow: "1", cents: 1}.msg(t, t0)), hqdb.Duplicate)
}
