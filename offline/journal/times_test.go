package journal

import (
	"context"
	"database/sql"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// at is 2026-12-01 10:00:00 UTC plus d: the moments of these tests, all
// within a second or two, where trimmed RFC 3339 miscompared.
func at(d time.Duration) time.Time {
	return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(d)
}

const ms = time.Millisecond

// fractionPairs are pairs of moments a before b that trimmed RFC 3339
// ordered the other way round, and two it always ordered right.
var fractionPairs = []struct {
	name string
	a, b time.Time
}{
	{"whole second, then 250 ms later", at(0), at(250 * ms)},
	{"whole second, then 500 ms later", at(0), at(500 * ms)},
	{"100 ms, then 150 ms", at(100 * ms), at(150 * ms)},
	{"500 ms, then 500.000001 ms", at(500 * ms), at(500*ms + time.Nanosecond)},
	{"500 ms, then the next whole second", at(500 * ms), at(time.Second)},
	{"a second apart", at(0), at(time.Second)},
}

func TestTimeLayoutSortsInTimeOrder(t *testing.T) {
	for _, c := range fractionPairs {
		t.Run(c.name, func(t *testing.T) {
			if a, b := ts(c.a), ts(c.b); !(a < b) || len(a) != len(b) {
				t.Errorf("ts(a) = %q, ts(b) = %q: not in time order, or not of one width", a, b)
			}
			for _, tm := range []time.Time{c.a, c.b} {
				if got := parseTS(ts(tm)); !got.Equal(tm) {
					t.Errorf("parseTS(ts(%v)) = %v", tm, got)
				}
				// A journal not yet upgraded (read-only) holds the trimmed form.
				if got := parseTS(tm.Format(time.RFC3339Nano)); !got.Equal(tm) {
					t.Errorf("parseTS of the old form of %v = %v", tm, got)
				}
			}
		})
	}
}

// clock is a journal's Now, set by the test.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// Expected stock counts a sale or an adjustment only when it came after
// the item's stock was set: within one second too.
func TestExpectedStockAcrossFractionsOfASecond(t *testing.T) {
	ctx := context.Background()
	for _, c := range fractionPairs {
		for _, itemFirst := range []bool{true, false} {
			set, move := c.a, c.b
			name := c.name + ": stock set, then a sale and an adjustment"
			if !itemFirst {
				set, move = c.b, c.a
				name = c.name + ": a sale and an adjustment, then stock set"
			}
			t.Run(name, func(t *testing.T) {
				clk := &clock{}
				j := openTemp(t, Options{Now: clk.now})
				if err := j.PutItem(ctx, Item{Barcode: "A", Name: "a", PriceCents: 199, Stock: 100, UpdatedAt: set}); err != nil {
					t.Fatal(err)
				}
				clk.t = move
				if err := j.Append(ctx, sale(1)); err != nil { // one of A
					t.Fatal(err)
				}
				if err := j.AppendAdjustment(ctx, Adjustment{AdjustmentID: "adj1", IdemKey: "adj1", Fingerprint: "fp", Barcode: "A",
					Delta: -3, Reason: "damage", Stock: 96, CreatedAt: move, Body: []byte(`{}`)}); err != nil {
					t.Fatal(err)
				}
				wantExpected, wantMoves := int64(100), int64(0)
				if itemFirst {
					wantExpected, wantMoves = 100-1-3, 2
				}
				items, err := j.ExpectedStock(ctx, math.MaxInt64)
				if err != nil || len(items) != 1 {
					t.Fatalf("expected stock: %+v %v", items, err)
				}
				if items[0].Expected != wantExpected || items[0].Moves != wantMoves {
					t.Errorf("stock set at %s, moves at %s: expected %d with %d moves, want %d with %d",
						ts(set), ts(move), items[0].Expected, items[0].Moves, wantExpected, wantMoves)
				}
			})
		}
	}
}

// The windows over journaled_at — the repair's "journaled since", the
// gap check's "journaled before", pruning's cutoff — hold a sale
// journaled within the same second on the right side of the bound.
func TestTimeWindowsAcrossFractionsOfASecond(t *testing.T) {
	ctx := context.Background()
	for _, c := range fractionPairs {
		for _, journaledFirst := range []bool{true, false} {
			journaled, bound := c.a, c.b
			name := c.name + ": journaled, then the bound"
			if !journaledFirst {
				journaled, bound = c.b, c.a
				name = c.name + ": the bound, then journaled"
			}
			t.Run(name, func(t *testing.T) {
				j := openTemp(t, Options{Now: func() time.Time { return journaled }})
				s := sale(1)
				if err := j.Append(ctx, s); err != nil {
					t.Fatal(err)
				}
				txns, _, err := j.AppliedSince(ctx, bound, 0, 10)
				if err != nil {
					t.Fatal(err)
				}
				if got := len(txns) == 1; got == journaledFirst {
					t.Errorf("journaled at %s: AppliedSince(%s) holds it = %v", ts(journaled), ts(bound), got)
				}
				before, err := j.MaxSeqJournaledBefore(ctx, bound)
				if err != nil {
					t.Fatal(err)
				}
				if got := before == s.Seq; got != journaledFirst {
					t.Errorf("journaled at %s: MaxSeqJournaledBefore(%s) = %d", ts(journaled), ts(bound), before)
				}
				if _, err := j.MarkConfirmed(ctx, s.FlowNo); err != nil {
					t.Fatal(err)
				}
				n, err := j.Prune(ctx, bound)
				if err != nil {
					t.Fatal(err)
				}
				if got := n == 1; got != journaledFirst {
					t.Errorf("journaled at %s: Prune(%s) deleted %d", ts(journaled), ts(bound), n)
				}
			})
		}
	}
}

// Lists ordered by a time column come out in time order.
func TestTimeOrderedListsWithinASecond(t *testing.T) {
	ctx := context.Background()
	clk := &clock{}
	j := openTemp(t, Options{Now: clk.now})
	// Written out of order, under ids whose order is neither.
	moments := map[string]time.Time{"e": at(100 * ms), "a": at(0), "d": at(time.Second), "b": at(150 * ms), "c": at(500 * ms)}
	want := []string{"a", "e", "b", "c", "d"}
	for i, id := range []string{"c", "a", "d", "e", "b"} {
		if err := j.AppendAdjustment(ctx, Adjustment{AdjustmentID: id, IdemKey: id, Fingerprint: "fp", Barcode: "A",
			Delta: 1, Reason: "count", Stock: 1, CreatedAt: moments[id], Body: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		s := sale(i + 1)
		s.FlowNo = id
		if err := j.Append(ctx, s); err != nil {
			t.Fatal(err)
		}
		clk.t = moments[id]
		if err := j.Quarantine(ctx, id, "refused"); err != nil {
			t.Fatal(err)
		}
		if err := j.SetUnappliable(ctx, id, "refused"); err != nil {
			t.Fatal(err)
		}
	}
	adjs, err := j.PendingAdjustments(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	q, err := j.Quarantined(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, err := j.Unappliable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gotAdjs, gotQ, gotU []string
	for _, a := range adjs {
		gotAdjs = append(gotAdjs, a.AdjustmentID)
	}
	for _, r := range q {
		gotQ = append(gotQ, r.FlowNo)
	}
	for _, r := range u {
		gotU = append(gotU, r.FlowNo)
	}
	for _, l := range []struct {
		name string
		got  []string
	}{{"pending adjustments", gotAdjs}, {"quarantined", gotQ}, {"unappliable", gotU}} {
		if !slices.Equal(l.got, want) {
			t.Errorf("%s in order %v, want %v", l.name, l.got, want)
		}
	}
}

// oldJournal writes a journal as the version before schema version 1
// did — every table, no schema version, times in trimmed RFC 3339 — and
// returns its path.
func oldJournal(t *testing.T, fill func(db *sql.DB)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	db, err := sql.Open("sqlite", dsn(path, Options{BusyTimeout: time.Second}, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(schema + unappliableSchema + catalogSchema + adjustmentsSchema); err != nil {
		t.Fatal(err)
	}
	fill(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// old is a time as the journal kept it before schema version 1.
func old(tm time.Time) string { return tm.UTC().Format(time.RFC3339Nano) }

func TestUpgradeRewritesTheTimesOfAnOlderJournal(t *testing.T) {
	ctx := context.Background()
	// Item A's stock was set on a whole second; a sale and an adjustment
	// followed within it: the old journal compares both as earlier.
	set, sold, adjusted, acked := at(0), at(250*ms), at(400*ms), at(2*time.Second+10*ms)
	// Items B… hold a time of every fraction length the old form wrote.
	fractions := []time.Duration{0, 100 * ms, 150 * ms, 120 * ms, 123400 * time.Microsecond, 123450 * time.Microsecond,
		123456 * time.Microsecond, 1234567 * 100, 12345678 * 10, 123456789, 1, 10, 100}
	path := oldJournal(t, func(db *sql.DB) {
		for _, q := range []struct {
			q    string
			args []any
		}{
			{`INSERT INTO items VALUES ('A', 'a', 199, 100, ?)`, []any{old(set)}},
			{`INSERT INTO txns (flow_no, seq, terminal_id, idem_key, fingerprint, kind, tender, total_cents, business_day,
				business_hour, created_at, body, mode, applied, state, journaled_at, acked_at)
				VALUES ('1000000000000001', 1, 'T01', 'k1', 'fp', 'sale', 'cash', 398, '20261201', '10', ?, '{}', 'normal', 1, 'acked', ?, ?)`,
				[]any{old(sold), old(sold), old(acked)}},
			{`INSERT INTO txn_lines VALUES ('1000000000000001', 0, 'A', 2, 199)`, nil},
			{`INSERT INTO stock_adjustments (adjustment_id, idem_key, fingerprint, barcode, delta, reason, stock, created_at, body)
				VALUES ('adj1', 'adj1', 'fp', 'A', -1, 'damage', 97, ?, '{}')`, []any{old(adjusted)}},
			{`INSERT INTO quarantine VALUES ('1000000000000001', 'r', ?)`, []any{old(acked)}},
			{`INSERT INTO unappliable VALUES ('1000000000000001', 'r', 'not a time')`, nil},
			{`INSERT INTO catalog VALUES ('A', 'a', 199, 1, 7, 'all', ?)`, []any{old(set)}},
			{`INSERT INTO meta VALUES (?, ?), (?, '7')`, []any{MetaCatalogAppliedAt, old(set), MetaCatalogRevision}},
		} {
			if _, err := db.Exec(q.q, q.args...); err != nil {
				t.Fatalf("%s: %v", q.q, err)
			}
		}
		for i, f := range fractions {
			if _, err := db.Exec(`INSERT INTO items VALUES (?, 'b', 1, 1, ?)`, "B"+string(rune('a'+i)), old(at(f))); err != nil {
				t.Fatal(err)
			}
		}
		// Times with an offset other than Z (no posedge wrote them, the
		// upgrade reads them in Go): more than one chunk of them.
		if _, err := db.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
			INSERT INTO items SELECT 'C' || i, 'c', 1, 1, ? FROM n`, at(500*ms).In(time.FixedZone("", 3600)).Format(time.RFC3339Nano)); err != nil {
			t.Fatal(err)
		}
	})
	expected := func(j *Journal) ItemStock {
		t.Helper()
		items, err := j.ExpectedStock(ctx, math.MaxInt64)
		if err != nil || len(items) == 0 || items[0].Barcode != "A" {
			t.Fatalf("expected stock: %+v %v", items, err)
		}
		return items[0]
	}

	// Read-only, the journal reads as it is: times parsed right, the
	// rows left alone — and, compared as text, wrong. That is the bug
	// the upgrade mends; seeing it here shows the rows exercise it.
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of a journal not yet upgraded: %v", err)
	}
	if it, err := ro.Item(ctx, "A"); err != nil || it == nil || !it.UpdatedAt.Equal(set) {
		t.Errorf("item A read-only = %+v %v, want updated at %v", it, err, set)
	}
	if st, err := ro.Stats(ctx); err != nil || st.LastAckedAt == nil || !st.LastAckedAt.Equal(acked) {
		t.Errorf("stats read-only = %+v %v", st, err)
	}
	if a := expected(ro); a.Moves != 0 {
		t.Fatalf("before the upgrade, the old rows count %d moves of A: they do not reproduce the miscomparison", a.Moves)
	}
	if v, _ := readSchemaVersion(ctx, ro.r); v != 0 {
		t.Errorf("a read-only open set schema version %d", v)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("writable open of a journal before schema version 1: %v", err)
	}
	if v, err := readSchemaVersion(ctx, j.r); err != nil || v != schemaVersion {
		t.Errorf("schema version %d %v, want %d", v, err, schemaVersion)
	}
	if a := expected(j); a.Expected != 100-2+(-1) || a.Moves != 2 {
		t.Errorf("after the upgrade, A expected %d with %d moves, want 97 with 2", a.Expected, a.Moves)
	}
	if txns, _, err := j.AppliedSince(ctx, set, 0, 10); err != nil || len(txns) != 1 {
		t.Errorf("after the upgrade, journaled since %s: %d %v, want the sale", ts(set), len(txns), err)
	}
	for _, tt := range timeTables() {
		where := ""
		if tt.where != "" {
			where = " AND " + tt.where
		}
		for _, c := range tt.columns {
			var n int
			if err := j.r.QueryRow(`SELECT COUNT(*) FROM ` + tt.table + ` WHERE ` + c + ` IS NOT NULL AND ` + c + ` != 'not a time'
				AND (length(` + c + `) != 30 OR substr(` + c + `, 30, 1) != 'Z')` + where).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s.%s: %d values not in the fixed layout", tt.table, c, n)
			}
		}
	}
	var adjAt, unapAt, catAt, metaAt string
	var ackedAdj sql.NullString
	_ = j.r.QueryRow(`SELECT created_at, acked_at FROM stock_adjustments`).Scan(&adjAt, &ackedAdj)
	_ = j.r.QueryRow(`SELECT at FROM unappliable`).Scan(&unapAt)
	_ = j.r.QueryRow(`SELECT applied_at FROM catalog`).Scan(&catAt)
	_ = j.r.QueryRow(`SELECT v FROM meta WHERE k = ?`, MetaCatalogAppliedAt).Scan(&metaAt)
	if adjAt != ts(adjusted) || ackedAdj.Valid || unapAt != "not a time" || catAt != ts(set) || metaAt != ts(set) {
		t.Errorf("after the upgrade: adjustment %q acked %v, unappliable %q, catalog %q, meta %q", adjAt, ackedAdj, unapAt, catAt, metaAt)
	}
	for i, f := range fractions {
		it, err := j.Item(ctx, "B"+string(rune('a'+i)))
		if err != nil || it == nil {
			t.Fatalf("item B%c: %v", 'a'+i, err)
		}
		var raw string
		_ = j.r.QueryRow(`SELECT updated_at FROM items WHERE barcode = ?`, it.Barcode).Scan(&raw)
		if raw != ts(at(f)) || !it.UpdatedAt.Equal(at(f)) {
			t.Errorf("old %q upgraded to %q (reads %v), want %q", old(at(f)), raw, it.UpdatedAt, ts(at(f)))
		}
	}
	var offsetAt string
	_ = j.r.QueryRow(`SELECT updated_at FROM items WHERE barcode = 'C2500'`).Scan(&offsetAt)
	if offsetAt != ts(at(500*ms)) {
		t.Errorf("a time with an offset upgraded to %q, want %q", offsetAt, ts(at(500*ms)))
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// Opening an upgraded journal again changes nothing.
	j = reopen(t, path)
	if a := expected(j); a.Expected != 97 || a.Moves != 2 {
		t.Errorf("after a second open, A expected %d with %d moves", a.Expected, a.Moves)
	}
}

// The upgrade pads in SQL what ts wrote before timeLayout, to exactly
// what ts writes now, and leaves every other value to the Go pass.
func TestUpgradePadsTrimmedTimesInSQL(t *testing.T) {
	ctx := context.Background()
	var cases []struct{ in, want string }
	for _, ns := range []int{0, 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 120000000, 123456780, 123456789, 999999999} {
		tm := at(time.Duration(ns))
		cases = append(cases, struct{ in, want string }{old(tm), ts(tm)})
	}
	for _, other := range []string{"not a time", "2026-12-01T11:00:00.5+01:00", "2026-12-01T10:00:00.Z", "2026-12-01T10:00:00.1x5Z",
		"2026-12-01T10:00:00.1234567890Z", "2026-12-01 10:00:00Z", ""} {
		cases = append(cases, struct{ in, want string }{other, other})
	}
	path := oldJournal(t, func(db *sql.DB) {
		for i, c := range cases {
			if _, err := db.Exec(`INSERT INTO items VALUES (?, 'x', 1, 1, ?)`, i, c.in); err != nil {
				t.Fatal(err)
			}
		}
	})
	db, err := sql.Open("sqlite", dsn(path, Options{BusyTimeout: time.Second}, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := fixTimeTable(ctx, tx, timeTable{table: "items", columns: []string{"updated_at"}}); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		var got string
		if err := tx.QueryRow(`SELECT updated_at FROM items WHERE barcode = ?`, i).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%q padded to %q, want %q", c.in, got, c.want)
		}
	}
}

// A journal salvaged from one before schema version 1 is at the current
// version: its times are rewritten on the way.
func TestSalvageOfAnOlderJournalRewritesItsTimes(t *testing.T) {
	ctx := context.Background()
	set, sold := at(0), at(250*ms)
	src := oldJournal(t, func(db *sql.DB) {
		for _, q := range []struct {
			q    string
			args []any
		}{
			{`INSERT INTO items VALUES ('A', 'a', 199, 100, ?)`, []any{old(set)}},
			{`INSERT INTO txns (flow_no, seq, terminal_id, idem_key, fingerprint, kind, tender, total_cents, business_day,
				business_hour, created_at, body, mode, applied, state, journaled_at)
				VALUES ('1000000000000001', 1, 'T01', 'k1', 'fp', 'sale', 'cash', 398, '20261201', '10', ?, '{}', 'normal', 1, 'pending', ?)`,
				[]any{old(sold), old(sold)}},
			{`INSERT INTO txn_lines VALUES ('1000000000000001', 0, 'A', 2, 199)`, nil},
		} {
			if _, err := db.Exec(q.q, q.args...); err != nil {
				t.Fatalf("%s: %v", q.q, err)
			}
		}
	})
	dest := filepath.Join(t.TempDir(), "salvaged.db")
	if _, err := Salvage(ctx, src, dest); err != nil {
		t.Fatal(err)
	}
	j, err := Open(ctx, dest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var updated, journaled string
	_ = j.r.QueryRow(`SELECT updated_at FROM items`).Scan(&updated)
	_ = j.r.QueryRow(`SELECT journaled_at FROM txns`).Scan(&journaled)
	if updated != ts(set) || journaled != ts(sold) {
		t.Errorf("salvaged times %q and %q, want %q and %q", updated, journaled, ts(set), ts(sold))
	}
	items, err := j.ExpectedStock(ctx, math.MaxInt64)
	if err != nil || len(items) != 1 || items[0].Expected != 98 || items[0].Moves != 1 {
		t.Errorf("expected stock of the salvaged journal: %+v %v, want 98 with 1 move", items, err)
	}
}

// The oldest unsynced and the last acknowledged times of the stats
// (status, the heartbeat to HQ) are the earliest and the latest.
func TestStatsTimesWithinASecond(t *testing.T) {
	ctx := context.Background()
	for _, c := range fractionPairs {
		t.Run(c.name, func(t *testing.T) {
			clk := &clock{}
			j := openTemp(t, Options{Now: clk.now})
			// Sales 1 to 3 wait, the earliest neither first nor last; 4
			// and 5 are acknowledged, the latest first.
			for i, created := range []time.Time{c.b, c.a, c.b, c.b, c.b} {
				s := sale(i + 1)
				s.CreatedAt = created
				if err := j.Append(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			for i, ackedAt := range []time.Time{c.b, c.a} {
				clk.t = ackedAt
				if err := j.MarkAcked(ctx, sale(4+i).FlowNo); err != nil {
					t.Fatal(err)
				}
			}
			st, err := j.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.OldestUnsent == nil || !st.OldestUnsent.Equal(c.a) || st.LastAckedAt == nil || !st.LastAckedAt.Equal(c.b) {
				t.Errorf("oldest unsynced %v, last acked %v, want %v and %v", st.OldestUnsent, st.LastAckedAt, c.a, c.b)
			}
		})
	}
}
