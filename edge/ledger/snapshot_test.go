package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/lock"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// snapshotLedger is a ledger of store S1 on a real Redis and journal.
func snapshotLedger(t *testing.T) (*ledger.Ledger, *redis.Client) {
	t.Helper()
	ctx := context.Background()
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	j, err := journal.Open(ctx, filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	l, err := ledger.New(ctx, ledger.Config{StoreID: "S1", RedisTimeout: time.Second}, rdb, j, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return l, rdb
}

// What the daily reconciliation does through the ledger: a snapshot,
// corrections under the job lock's fence, and nothing written by a holder
// whose lock another took.
func TestSnapshotAndFencedCorrections(t *testing.T) {
	l, rdb := snapshotLedger(t)
	ctx := context.Background()
	const day, other = "20260301", "20260302"
	// Fields txn.lua never writes are no counters: left out, left alone.
	rdb.HSet(ctx, "pe:{S1}:daily:"+day, "note", "x", "t:T09:other", 5, "t:T09:sales", "many")
	for _, it := range []ledger.Item{{Barcode: "A", Name: "a", PriceCents: 150, Stock: 10}, {Barcode: "B", Name: "b", PriceCents: 99, Stock: 4}} {
		if err := l.PutItem(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	lk, err := l.JobLock("reconcile").Acquire(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c := ledger.Corrections{
		Counters: []ledger.CounterDelta{{Day: day, Field: "t:T01:sales", Delta: 2}, {Day: day, Hourly: true, Field: "09:sales", Delta: 1}},
		Stock:    []ledger.StockDelta{{Barcode: "A", Delta: -3}, {Barcode: "Z", Delta: 5}}, // Z is missing: left missing
		Restore: []ledger.RestoredItem{{Item: ledger.Item{Barcode: "B", Name: "b2", PriceCents: 1, Stock: 1}}, // B exists: left alone
			{Item: ledger.Item{Barcode: "C", Name: "c", PriceCents: 12345678901234567, Stock: 7}}},
	}
	if n, err := l.Correct(ctx, lk, c); err != nil || n != c.Len() {
		t.Fatalf("correct: %d %v, want %d", n, err, c.Len())
	}
	snap, err := l.Snapshot(ctx, []string{day, other}, []string{"A", "B", "C", "Z"})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(snap.Seq, snap.Daily, snap.Hourly, snap.Stock)
	want := "0 map[20260301:map[t:T01:sales:2] 20260302:map[]] map[20260301:map[09:sales:1] 20260302:map[]] map[A:7 B:4 C:7]"
	if got != want {
		t.Fatalf("snapshot\n%s\nwant\n%s", got, want)
	}
	if it, err := l.Item(ctx, "C"); err != nil || it.PriceCents != 12345678901234567 || it.Name != "c" {
		t.Fatalf("restored item %+v %v: the price must survive to the cent", it, err)
	}
	for d, want := range map[string]bool{day: true, other: false} {
		if has, err := l.HasDayCounters(ctx, d); err != nil || has != want {
			t.Errorf("HasDayCounters(%s) = %v %v, want %v", d, has, err, want)
		}
	}

	// More corrections than one script runs: every chunk applied.
	var many ledger.Corrections
	for i := 0; i < 600; i++ {
		many.Counters = append(many.Counters, ledger.CounterDelta{Day: other, Field: fmt.Sprintf("t:T%03d:sales", i), Delta: 1})
	}
	if n, err := l.Correct(ctx, lk, many); err != nil || n != 600 {
		t.Fatalf("600 corrections: %d %v", n, err)
	}
	if snap, err := l.Snapshot(ctx, []string{other}, nil); err != nil || len(snap.Daily[other]) != 600 {
		t.Fatalf("after 600 corrections: %d fields, %v", len(snap.Daily[other]), err)
	}

	// Another holder takes the lock: the first one's corrections are fenced.
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.JobLock("reconcile").Acquire(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := l.JobLock("reconcile").Acquire(ctx, time.Minute); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("second acquisition while held: %v", err)
	}
	n, err := l.Correct(ctx, lk, ledger.Corrections{Stock: []ledger.StockDelta{{Barcode: "A", Delta: 100}}})
	if !errors.Is(err, lock.ErrFenced) || n != 0 {
		t.Fatalf("stale holder's correction: %d %v, want ErrFenced", n, err)
	}
	if snap, err := l.Snapshot(ctx, nil, []string{"A"}); err != nil || snap.Stock["A"] != 7 {
		t.Fatalf("a fenced correction wrote: stock %v %v", snap.Stock, err)
	}
}

func TestExpectedCounters(t *testing.T) {
	rows := []journal.DayRow{
		{TerminalID: "T01", Tender: "cash", Hour: "09", Totals: journal.DayTotals{Sales: 2, SalesCents: 300}},
		{TerminalID: "T01", Tender: "card", Hour: "10", Totals: journal.DayTotals{Sales: 1, SalesCents: 150, Refunds: 1, RefundCents: 150}},
		{TerminalID: "T02", Tender: "cash", Hour: "09", Totals: journal.DayTotals{Sales: 1, SalesCents: 99}},
	}
	daily, hourly := ledger.ExpectedCounters(rows)
	tests := []struct {
		m     map[string]int64
		field string
		want  int64
	}{
		{daily, "t:T01:sales", 3},
		{daily, "t:T01:sales_cents", 450},
		{daily, "t:T01:refund_cents", 150},
		{daily, "t:T02:sales", 1},
		{daily, "x:cash:sales_cents", 399},
		{daily, "x:card:refunds", 1},
		{hourly, "09:sales", 3},
		{hourly, "10:refund_cents", 150},
	}
	for _, tt := range tests {
		if got := tt.m[tt.field]; got != tt.want {
			t.Errorf("%s = %d, want %d", tt.field, got, tt.want)
		}
	}
	if len(daily) != 4*4 || len(hourly) != 2*4 {
		t.Errorf("%d daily and %d hourly fields, want 16 and 8", len(daily), len(hourly))
	}
}
