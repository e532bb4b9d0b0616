package reconcile

import (
	"context"
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
