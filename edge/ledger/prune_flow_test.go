package ledger_test

import (
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/offline/journal"
)

// Issue 22.3: a degraded sale after the journal pruned every degraded row
// gets a new number, not the pruned one again (HQ holds the old sale
// under it and would drop the new one as a duplicate).
func TestDegradedNumberAfterPruneIsNew(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 100, 10)
	e.l.SetRedisDown(true)
	s := ledger.SaleRequest{Lines: []ledger.Line{{Barcode: "A", Qty: 1, PriceCents: 100}}, TotalCents: 100, Tender: "cash"}
	first := e.mustSale("T01", "k1", s)
	if err := e.j.MarkApplied(e.ctx, first.FlowNo); err != nil {
		t.Fatal(err)
	}
	if _, err := e.j.MarkConfirmed(e.ctx, first.FlowNo); err != nil {
		t.Fatal(err)
	}
	if n, err := e.j.Prune(e.ctx, time.Now().Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("pruned %d (%v), want the one degraded sale", n, err)
	}
	e.restart(journal.Options{})
	e.l.SetRedisDown(true)
	second := e.mustSale("T01", "k2", s)
	if second.FlowNo <= first.FlowNo {
		t.Fatalf("degraded number after prune %s, first was %s: issued again", second.FlowNo, first.FlowNo)
	}
}
