package reconcile

import (
	"context"
	"fmt"
	"testing"

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
