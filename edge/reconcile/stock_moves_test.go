package reconcile

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/offline/journal"
)

// Stock adjustments and catalog changes are moves the journal knows: a
// reconciliation after them finds Redis right and changes nothing.
func TestAdjustmentsAndCatalogChangesAreNotDifferences(t *testing.T) {
	e := newEnv(t, journal.Options{})
	ctx := context.Background()
	e.item("A", 10)
	e.sale("T01", "A", 3, "cash")
	if _, err := e.l.AdjustStock(ctx, "A", ledger.StockAdjustment{Delta: 24, Reason: "receiving", IdempotencyKey: "grn-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.ApplyCatalog(ctx, ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 175, Active: true, Revision: 4, Through: 4}); err != nil {
		t.Fatal(err)
	}
	e.sale("T02", "A", 1, "card")
	if _, err := e.l.AdjustStock(ctx, "A", ledger.StockAdjustment{Delta: -2, Reason: "damage", IdempotencyKey: "dmg-1"}); err != nil {
		t.Fatal(err)
	}
	// A new item from the catalog, then goods received.
	if _, err := e.l.ApplyCatalog(ctx, ledger.CatalogChange{Barcode: "N", Name: "New", PriceCents: 99, Active: true, Revision: 5, Through: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.AdjustStock(ctx, "N", ledger.StockAdjustment{Delta: 12, Reason: "receiving", IdempotencyKey: "grn-2"}); err != nil {
		t.Fatal(err)
	}
	e.sale("T01", "N", 5, "cash")
	if rep := e.run(); rep.Differences != 0 {
		t.Fatalf("reconciliation after adjustments and catalog changes: %+v", rep)
	}
	if e.stock("A") != "28" || e.stock("N") != "7" {
		t.Fatalf("stock A %s N %s, want 28 and 7", e.stock("A"), e.stock("N"))
	}
}

// A wiped Redis rebuilt by the reconciliation gets HQ's active flag and
// catalog revision back with each item: a deactivated item stays off the
// tills, and an older catalog revision cannot win afterwards.
func TestWipedRedisKeepsHQsCatalog(t *testing.T) {
	e := newEnv(t, journal.Options{})
	ctx := context.Background()
	for _, c := range []ledger.CatalogChange{
		{Barcode: "A", Name: "Apple", PriceCents: 120, Active: true, Revision: 4, StoreKey: true, Through: 4},
		{Barcode: "B", Name: "Bread", PriceCents: 210, Active: false, Revision: 6, Through: 6},
	} {
		if _, err := e.l.ApplyCatalog(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.l.AdjustStock(ctx, "A", ledger.StockAdjustment{Delta: 9, Reason: "receiving", IdempotencyKey: "grn-1"}); err != nil {
		t.Fatal(err)
	}
	e.sale("T01", "A", 2, "cash")
	e.rdb.FlushAll(ctx)
	if rep := e.run(); rep.Differences == 0 {
		t.Fatalf("nothing found on a wiped redis: %+v", rep)
	}
	if got, _ := e.rdb.HMGet(ctx, itemKey("A"), "name", "price_cents", "stock", "cat_rev", "cat_src").Result(); fmt.Sprint(got) != "[Apple 120 7 4 store]" {
		t.Errorf("A rebuilt as %v, want [Apple 120 7 4 store]", got)
	}
	if got, _ := e.rdb.HMGet(ctx, itemKey("B"), "price_cents", "stock", "active", "cat_rev").Result(); fmt.Sprint(got) != "[210 0 0 6]" {
		t.Errorf("B rebuilt as %v, want [210 0 0 6] (inactive)", got)
	}
	if _, err := e.l.Item(ctx, "B"); err == nil {
		t.Error("B (deactivated at HQ) found by a lookup after the rebuild")
	}
	if out, err := e.l.ApplyCatalog(ctx, ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 99, Active: true, Revision: 9, Through: 9}); err != nil || out != ledger.CatalogStoreWins {
		t.Errorf("an _all change over A's rebuilt store entry: %s %v, want store_wins", out, err)
	}
	if rep := e.run(); rep.Differences != 0 {
		t.Fatalf("after the rebuild: %+v", rep)
	}
}

// The stock is read in chunks, each at its own flow sequence: a sale
// between two reads, of an item read before it or after, is no
// difference; a real one in any chunk is still found and corrected; a
// sequence that goes back between reads (a failover) fails the look.
func TestStockReadInChunks(t *testing.T) {
	e := newEnv(t, journal.Options{})
	ctx := context.Background()
	for _, b := range []string{"A", "B", "C", "D", "E", "F"} {
		e.item(b, 100)
	}
	e.r.stockChunk = 2
	reads := 0
	e.r.betweenStockReads = func(n int) {
		reads++
		if n == 1 { // A and B read: one of them sold, and one still to read
			e.sale("T01", "A", 2, "cash")
			e.sale("T01", "E", 3, "cash")
		}
	}
	if rep := e.run(); rep.Differences != 0 || rep.Unconfirmed != 0 {
		t.Fatalf("sales between stock reads counted as differences: %+v", rep)
	}
	if reads != 3 {
		t.Errorf("%d stock reads in one look, want 3 (6 items, 2 a read)", reads)
	}
	if e.stock("A") != "98" || e.stock("E") != "97" {
		t.Fatalf("stock A %s E %s after the run, want 98 and 97 (the sales only)", e.stock("A"), e.stock("E"))
	}

	e.rdb.HIncrBy(ctx, itemKey("F"), "stock", -5) // lost by Redis, in the last chunk
	if rep := e.run(); rep.Differences != 1 || len(rep.Stock) != 1 || rep.Stock[0].Barcode != "F" {
		t.Fatalf("a drift of F beside sales between reads: %+v", rep)
	}
	if e.stock("F") != "100" || e.stock("A") != "94" {
		t.Fatalf("stock F %s A %s, want 100 (corrected) and 94 (two looks, two sales)", e.stock("F"), e.stock("A"))
	}

	e.r.betweenStockReads = func(n int) {
		if n == 1 {
			e.rdb.Set(ctx, seqKey, 1, 0)
		}
	}
	if _, err := e.r.Run(ctx, e.r.DefaultDays()); err == nil || !strings.Contains(err.Error(), "went back") {
		t.Fatalf("a sequence that went back between reads: %v, want an error", err)
	}
}

// No script of a reconciliation reads more than StockChunk items (Redis
// runs one script at a time; sales wait behind it): measured from Redis's
// own log of every command. POSEDGE_TEST_ITEMS=100000 go test -v -run
// TestReconcileScriptsStayShort ./edge/reconcile/ prints the slowest at
// a supermarket's catalog size.
func TestReconcileScriptsStayShort(t *testing.T) {
	e := newEnv(t, journal.Options{})
	ctx := context.Background()
	n := 2*StockChunk + 500
	if v, err := strconv.Atoi(os.Getenv("POSEDGE_TEST_ITEMS")); err == nil && v > 0 {
		n = v
	}
	for i := range n {
		e.item(fmt.Sprintf("I%07d", i), 100)
	}
	e.sale("T01", "I0000001", 1, "cash")
	e.rdb.HIncrBy(ctx, itemKey(fmt.Sprintf("I%07d", n-1)), "stock", -1) // a drift in the last chunk: two looks
	e.rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0")
	// The log holds the commands scripts run too (an HGET an item, each
	// look): room for all of them.
	e.rdb.ConfigSet(ctx, "slowlog-max-len", strconv.Itoa(4*n+10000))
	e.rdb.SlowLogReset(ctx)
	if rep := e.run(); rep.Differences != 1 {
		t.Fatalf("the drift of the last item: %+v", rep)
	}
	logged, err := e.rdb.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var scripts int
	var slowest time.Duration

	for _, c := range logged {
		if len(c.Args) < 3 || !strings.EqualFold(c.Args[0], "evalsha") && !strings.EqualFold(c.Args[0], "eval") {
			continue
		}
		scripts++
		slowest = max(slowest, c.Duration)
		if keys, _ := strconv.Atoi(c.Args[2]); keys > StockChunk+1+2*len(e.r.DefaultDays()) {
			t.Errorf("a script over %d keys (%v µs), want at most %d items a script", keys, c.Duration.Microseconds(), StockChunk)
		}
	}
	if scripts < 2*(n/StockChunk) {
		t.Fatalf("%d scripts logged, want at least %d (two looks of %d items)", scripts, 2*(n/StockChunk), n)
	}
	t.Logf("%d items: %d scripts, the slowest %v", n, scripts, slowest)
}
