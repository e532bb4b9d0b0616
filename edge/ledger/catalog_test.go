package ledger_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// A catalog change reaches Redis and the daemon's copy; stock stays the
// store's; a deactivated item is unknown to lookups and sales but batch
// uploads of past sales still go through.
func TestApplyCatalog(t *testing.T) {
	e := newEnv(t, journal.Options{})
	apply := func(c ledger.CatalogChange) string {
		t.Helper()
		out, err := e.l.ApplyCatalog(e.ctx, c)
		if err != nil {
			t.Fatalf("apply %+v: %v", c, err)
		}
		return out
	}

	// A new item from the catalog: stock 0, sellable by name and price.
	if out := apply(ledger.CatalogChange{Barcode: "N", Name: "New", PriceCents: 250, Active: true, Revision: 3, Through: 3}); out != ledger.CatalogApplied {
		t.Fatalf("outcome %s", out)
	}
	if it, err := e.l.Item(e.ctx, "N"); err != nil || it.Name != "New" || it.PriceCents != 250 || it.Stock != 0 {
		t.Fatalf("item N = %+v %v, want New 250 stock 0", it, err)
	}

	// A local item with stock: the catalog changes its price, not its stock.
	e.putItem("A", 150, 10)
	apply(ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 175, Active: true, Revision: 5, Through: 5})
	if it, err := e.l.Item(e.ctx, "A"); err != nil || it.PriceCents != 175 || it.Stock != 10 {
		t.Fatalf("item A = %+v %v, want 175 stock 10", it, err)
	}
	e.mustSale("T01", "s1", sale1("A", 2, 175))

	// Precedence and revisions, through the ledger.
	if out := apply(ledger.CatalogChange{Barcode: "A", Name: "Apple S1", PriceCents: 160, Active: true, Revision: 4, StoreKey: true, Through: 6}); out != ledger.CatalogApplied {
		t.Errorf("store entry over _all: %s, want applied", out)
	}
	if out := apply(ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 999, Active: true, Revision: 7, Through: 7}); out != ledger.CatalogStoreWins {
		t.Errorf("_all under a store entry: %s, want store_wins", out)
	}
	if out := apply(ledger.CatalogChange{Barcode: "A", Name: "Apple S1", PriceCents: 160, Active: true, Revision: 4, StoreKey: true, Through: 7}); out != ledger.CatalogSame {
		t.Errorf("redelivered revision: %s, want same", out)
	}
	if it, _ := e.l.Item(e.ctx, "A"); it.PriceCents != 160 || it.Stock != 8 {
		t.Errorf("item A = %+v, want 160 with stock 8", it)
	}

	// Deactivated: lookup 404 item_not_found, sale 422 unknown_item, batch accepted.
	apply(ledger.CatalogChange{Barcode: "A", Name: "Apple S1", PriceCents: 160, Active: false, Revision: 8, StoreKey: true, Through: 8})
	_, err := e.l.Item(e.ctx, "A")
	if le := refusal(t, err); le.Kind != ledger.KindNotFound || le.Code != "item_not_found" {
		t.Errorf("lookup of an inactive item: %v, want not_found item_not_found", le)
	}
	_, err = e.sale("T01", "s2", sale1("A", 1, 160))
	if le := refusal(t, err); le.Kind != ledger.KindUnprocessable || le.Code != "unknown_item" {
		t.Errorf("sale of an inactive item: %v, want unprocessable unknown_item", le)
	}
	past := sale1("A", 1, 160)
	past.OccurredAt = new(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	if res := e.l.Batch(e.ctx, "T01", []ledger.BatchSale{{Key: "b1", Sale: past}}); res[0].Err != nil {
		t.Errorf("batch upload of a past sale of an inactive item: %v, want accepted", res[0].Err)
	}
	if got, _ := e.rdb.HGet(e.ctx, "pe:{S1}:item:A", "stock").Int64(); got != 7 {
		t.Errorf("stock after the batch sale %d, want 7", got)
	}

	// The daemon's copy: what lookups answer while Redis is down.
	c, err := e.j.CatalogEntry(e.ctx, "A")
	if err != nil || c == nil || c.Active || c.Revision != 8 || c.Source != "store" {
		t.Errorf("journal catalog entry %+v %v, want inactive rev 8 from store", c, err)
	}
	if rev, _, _, err := e.l.CatalogMark(e.ctx); err != nil || rev != 8 {
		t.Errorf("catalog mark %d %v, want 8", rev, err)
	}
	e.l.SetRedisDown(true)
	_, err = e.l.Item(e.ctx, "A")
	if le := refusal(t, err); le.Code != "item_not_found" {
		t.Errorf("degraded lookup of an inactive item: %v, want item_not_found", le)
	}
	if it, err := e.l.Item(e.ctx, "N"); err != nil || !it.Stale || it.PriceCents != 250 {
		t.Errorf("degraded lookup of N = %+v %v, want the stale copy at 250", it, err)
	}
}

// A Redis that lost the latest catalog change (a failover) gets it back
// from the journal's copy with the repair; a local override made after
// the change is kept.
func TestRepairReappliesCatalog(t *testing.T) {
	e := newEnv(t, journal.Options{})
	for _, c := range []ledger.CatalogChange{
		{Barcode: "A", Name: "Apple", PriceCents: 100, Active: true, Revision: 3, Through: 3},
		{Barcode: "A", Name: "Apple", PriceCents: 120, Active: false, Revision: 5, Through: 5},
		{Barcode: "B", Name: "Bread", PriceCents: 200, Active: true, Revision: 6, Through: 6},
	} {
		if _, err := e.l.ApplyCatalog(e.ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// What a promoted replica that missed revision 5 holds.
	e.rdb.HSet(e.ctx, "pe:{S1}:item:A", "price_cents", "100", "active", "1", "cat_rev", "3")
	// A local override of B after its catalog change.
	e.putItem("B", 190, 4)
	if err := e.l.Repair(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.Item(e.ctx, "A"); refusal(t, err).Code != "item_not_found" {
		t.Errorf("A after the repair: %v, want inactive again (revision 5)", err)
	}
	if got, _ := e.rdb.HMGet(e.ctx, "pe:{S1}:item:A", "price_cents", "cat_rev").Result(); fmt.Sprint(got) != "[120 5]" {
		t.Errorf("A in redis %v, want price 120 at revision 5", got)
	}
	if it, err := e.l.Item(e.ctx, "B"); err != nil || it.PriceCents != 190 || it.Stock != 4 {
		t.Errorf("B = %+v %v, want the local override kept (190, stock 4)", it, err)
	}
}

// A Redis that lost everything (restarted empty, FLUSHALL) gets every item
// back from the journal with the repair, however long ago HQ's change was
// applied: HQ's name, price, active flag and revision, and the stock the
// journal expects (set, sold, received) — never stock 0 first. A catalog
// change arriving before the repair waits for it instead of making the
// item with stock 0.
func TestRepairRestoresItemsRedisLost(t *testing.T) {
	e := newEnv(t, journal.Options{})
	apply := func(c ledger.CatalogChange) string {
		t.Helper()
		out, err := e.l.ApplyCatalog(e.ctx, c)
		if err != nil {
			t.Fatalf("apply %+v: %v", c, err)
		}
		return out
	}
	adjust := func(barcode string, delta int64, key string) {
		t.Helper()
		if _, err := e.l.AdjustStock(e.ctx, barcode, ledger.StockAdjustment{Delta: delta, Reason: "receiving", IdempotencyKey: key}); err != nil {
			t.Fatalf("adjust %s: %v", barcode, err)
		}
	}
	apply(ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 100, Active: true, Revision: 3, Through: 3})
	adjust("A", 10, "grn-a")
	e.mustSale("T01", "s1", sale1("A", 2, 100))
	apply(ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 120, Active: true, Revision: 4, Through: 4})
	apply(ledger.CatalogChange{Barcode: "B", Name: "Bread", PriceCents: 200, Active: true, Revision: 5, Through: 5})
	adjust("B", 5, "grn-b")
	apply(ledger.CatalogChange{Barcode: "B", Name: "Bread", PriceCents: 210, Active: false, Revision: 6, Through: 6})
	apply(ledger.CatalogChange{Barcode: "C", Name: "Cheese S1", PriceCents: 450, Active: true, Revision: 2, StoreKey: true, Through: 7})
	e.putItem("L", 75, 7) // a local item, never in HQ's catalog
	e.mustSale("T02", "s2", sale1("L", 1, 75))
	e.waitCompleted("T01:s1", "T02:s2")

	tries := 0
	check := func(when string, priceA int64) {
		t.Helper()
		if it, err := e.l.Item(e.ctx, "A"); err != nil || it.Name != "Apple" || it.PriceCents != priceA || it.Stock != 8 {
			t.Errorf("%s: A = %+v %v, want Apple at HQ's %d with stock 10-2", when, it, err, priceA)
		}
		tries++
		if _, err := e.l.Item(e.ctx, "B"); err == nil || refusal(t, err).Code != "item_not_found" {
			t.Errorf("%s: lookup of B (deactivated at HQ) %v, want item_not_found", when, err)
		}
		if _, err := e.sale("T01", fmt.Sprintf("sB%d", tries), sale1("B", 1, 210)); err == nil || refusal(t, err).Code != "unknown_item" {
			t.Errorf("%s: sale of B %v, want unknown_item", when, err)
		}
		if got, _ := e.rdb.HMGet(e.ctx, "pe:{S1}:item:B", "price_cents", "stock", "active", "cat_rev", "cat_src").Result(); fmt.Sprint(got) != "[210 5 0 6 all]" {
			t.Errorf("%s: B in redis %v, want [210 5 0 6 all]", when, got)
		}
		if got, _ := e.rdb.HMGet(e.ctx, "pe:{S1}:item:C", "price_cents", "stock", "cat_rev", "cat_src").Result(); fmt.Sprint(got) != "[450 0 2 store]" {
			t.Errorf("%s: C in redis %v, want [450 0 2 store]", when, got)
		}
		if it, err := e.l.Item(e.ctx, "L"); err != nil || it.PriceCents != 75 || it.Stock != 6 {
			t.Errorf("%s: local item L = %+v %v, want 75 with stock 6", when, it, err)
		}
	}
	check("before the loss", 120)

	if err := e.rdb.FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// HQ changes A while Redis is empty: the daemon's copy takes it, Redis
	// gets no item with stock 0.
	if out := apply(ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 125, Active: true, Revision: 8, Through: 8}); out != ledger.CatalogDeferred {
		t.Errorf("a change of an item redis lost: %s, want %s", out, ledger.CatalogDeferred)
	}
	if out := apply(ledger.CatalogChange{Barcode: "C", Name: "Cheese", PriceCents: 999, Active: true, Revision: 9, Through: 9}); out != ledger.CatalogStoreWins {
		t.Errorf("an _all change under a store entry redis lost: %s, want store_wins", out)
	}
	if n, _ := e.rdb.Exists(e.ctx, "pe:{S1}:item:A", "pe:{S1}:item:C").Result(); n != 0 {
		t.Fatalf("%d items made in the emptied redis before the repair", n)
	}
	if err := e.l.Repair(e.ctx); err != nil {
		t.Fatal(err)
	}
	check("after the repair", 125)
	if out := apply(ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 120, Active: true, Revision: 4, Through: 9}); out != ledger.CatalogStale {
		t.Errorf("a replay of A's revision 4 after the repair: %s, want stale", out)
	}
	if out := apply(ledger.CatalogChange{Barcode: "B", Name: "Bread", PriceCents: 210, Active: false, Revision: 5, Through: 9}); out != ledger.CatalogStale {
		t.Errorf("an older revision of B after the repair: %s, want stale", out)
	}
	// A second repair changes nothing.
	if applied, created, err := e.l.RestoreItems(e.ctx); err != nil || applied != 0 || created != 0 {
		t.Errorf("restore on a whole redis: %d applied %d created %v, want none", applied, created, err)
	}
}

// Watch notices a Redis that lost its data without a master change (a
// FLUSHALL keeps the run id) and repairs it.
func TestWatchRepairsFlushedRedis(t *testing.T) {
	e := newEnv(t, journal.Options{})
	if _, err := e.l.ApplyCatalog(e.ctx, ledger.CatalogChange{Barcode: "B", Name: "Bread", PriceCents: 200, Active: false, Revision: 5, Through: 5}); err != nil {
		t.Fatal(err)
	}
	e.putItem("A", 150, 9)
	id, err := e.l.Start(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	go e.l.Watch(ctx, 50*time.Millisecond, id)
	if err := e.rdb.FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 5*time.Second, "items back after the FLUSHALL", func() bool {
		got, _ := e.rdb.HMGet(e.ctx, "pe:{S1}:item:B", "active", "cat_rev").Result()
		return fmt.Sprint(got) == "[0 5]"
	})
	if got := e.stock("A"); got != 9 {
		t.Errorf("A's stock %d after the FLUSHALL, want 9", got)
	}
}

// Contract §6 leaves two cases open; docs/catalog.md settles them:
//   - a local PUT of an item HQ deactivated changes its name, price and
//     stock but does not make it sellable again: the active flag is HQ's
//     (the PUT carries none), and HQ's next change of the barcode wins
//     over the PUT's name and price as for any local override;
//   - a stock adjustment of an inactive item is accepted (goods of a
//     discontinued item received, counted or written off).
func TestInactiveItemLocalPutAndAdjustment(t *testing.T) {
	e := newEnv(t, journal.Options{})
	if _, err := e.l.ApplyCatalog(e.ctx, ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 100, Active: true, Revision: 3, Through: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.AdjustStock(e.ctx, "A", ledger.StockAdjustment{Delta: 6, Reason: "receiving", IdempotencyKey: "grn-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.ApplyCatalog(e.ctx, ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 100, Active: false, Revision: 4, Through: 4}); err != nil {
		t.Fatal(err)
	}

	r, err := e.l.AdjustStock(e.ctx, "A", ledger.StockAdjustment{Delta: 4, Reason: "receiving", IdempotencyKey: "grn-2"})
	if err != nil || r.Stock != 10 {
		t.Fatalf("adjustment of an inactive item: %+v %v, want accepted with stock 10", r, err)
	}
	if r, err = e.l.AdjustStock(e.ctx, "A", ledger.StockAdjustment{Delta: -3, Reason: "damage", IdempotencyKey: "dmg-1"}); err != nil || r.Stock != 7 {
		t.Fatalf("write-off of an inactive item: %+v %v, want accepted with stock 7", r, err)
	}

	e.putItem("A", 90, 20)
	if _, err := e.l.Item(e.ctx, "A"); err == nil || refusal(t, err).Code != "item_not_found" {
		t.Errorf("lookup after a local PUT of an item HQ deactivated: %v, want item_not_found", err)
	}
	if _, err := e.sale("T01", "s1", sale1("A", 1, 90)); err == nil || refusal(t, err).Code != "unknown_item" {
		t.Errorf("sale after a local PUT of an item HQ deactivated: %v, want unknown_item", err)
	}
	if got, _ := e.rdb.HMGet(e.ctx, "pe:{S1}:item:A", "name", "price_cents", "stock", "active").Result(); fmt.Sprint(got) != "[item A 90 20 0]" {
		t.Errorf("A in redis after the PUT %v, want [item A 90 20 0]", got)
	}
	e.l.SetRedisDown(true)
	if _, err := e.l.Item(e.ctx, "A"); err == nil || refusal(t, err).Code != "item_not_found" {
		t.Errorf("degraded lookup after the PUT: %v, want item_not_found", err)
	}
	e.l.SetRedisDown(false)

	// HQ reactivates: its name and price win over the PUT's, the stock stays.
	if _, err := e.l.ApplyCatalog(e.ctx, ledger.CatalogChange{Barcode: "A", Name: "Apple", PriceCents: 110, Active: true, Revision: 5, Through: 5}); err != nil {
		t.Fatal(err)
	}
	if it, err := e.l.Item(e.ctx, "A"); err != nil || it.Name != "Apple" || it.PriceCents != 110 || it.Stock != 20 {
		t.Errorf("A after HQ reactivated it = %+v %v, want Apple at 110 with stock 20", it, err)
	}
}
