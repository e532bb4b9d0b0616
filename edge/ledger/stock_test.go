package ledger_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/offline/journal"
)

// Receiving goods while four tills sell the same item: the final stock
// is initial + received − sold, exactly; every adjustment is journaled
// once and its key replays the same answer.
func TestAdjustStockConcurrentWithSales(t *testing.T) {
	e := newEnv(t, journal.Options{})
	const initial, tills, salesPerTill, receipts, perReceipt = 100, 4, 30, 20, 5
	e.putItem("A", 150, initial)
	var wg sync.WaitGroup
	sold := make([]int, tills)
	for i := range tills {
		wg.Go(func() {
			term := fmt.Sprintf("T%02d", i+1)
			for k := range salesPerTill {
				if _, err := e.sale(term, fmt.Sprintf("s%d", k), sale1("A", 1, 150)); err == nil {
					sold[i]++
				} else if le := refusal(t, err); le.Code != "insufficient_stock" {
					t.Errorf("sale %s/%d: %v", term, k, le)
				}
			}
		})
	}
	results := make([]*ledger.AdjustmentResult, receipts)
	wg.Go(func() {
		for k := range receipts {
			r, err := e.l.AdjustStock(e.ctx, "A", ledger.StockAdjustment{Delta: perReceipt, Reason: "receiving", IdempotencyKey: fmt.Sprintf("r%d", k)})
			if err != nil {
				t.Errorf("adjustment %d: %v", k, err)
				continue
			}
			results[k] = r
		}
	})
	wg.Wait()
	total := 0
	for _, n := range sold {
		total += n
	}
	if got, want := e.stock("A"), int64(initial+receipts*perReceipt-total); got != want {
		t.Fatalf("stock %d, want %d + %d − %d = %d", got, initial, receipts*perReceipt, total, want)
	}

	// The same key again: the same answer, no second change.
	before := e.stock("A")
	again, err := e.l.AdjustStock(e.ctx, "A", ledger.StockAdjustment{Delta: perReceipt, Reason: "receiving", IdempotencyKey: "r3"})
	if err != nil || results[3] == nil || *again != *results[3] {
		t.Fatalf("replay of r3 = %+v %v, want %+v", again, err, results[3])
	}
	if e.stock("A") != before {
		t.Fatalf("a replay changed stock %d → %d", before, e.stock("A"))
	}
	pending, err := e.j.PendingAdjustments(e.ctx, 1000)
	if err != nil || len(pending) != receipts {
		t.Fatalf("%d adjustments journaled for HQ (%v), want %d", len(pending), err, receipts)
	}
}

func TestAdjustStockRefusals(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 3)
	if _, err := e.l.AdjustStock(e.ctx, "A", ledger.StockAdjustment{Delta: -1, Reason: "damage", IdempotencyKey: "k1"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		barcode string
		adj     ledger.StockAdjustment
		kind    ledger.Kind
		code    string
	}{
		{"key reused for another delta", "A", ledger.StockAdjustment{Delta: -2, Reason: "damage", IdempotencyKey: "k1"}, ledger.KindUnprocessable, "idempotency_key_reused"},
		{"below zero", "A", ledger.StockAdjustment{Delta: -3, Reason: "count", IdempotencyKey: "k2"}, ledger.KindConflict, "insufficient_stock"},
		{"unknown item", "NOPE", ledger.StockAdjustment{Delta: 1, Reason: "receiving", IdempotencyKey: "k3"}, ledger.KindNotFound, "item_not_found"},
		{"zero delta", "A", ledger.StockAdjustment{Delta: 0, Reason: "count", IdempotencyKey: "k4"}, ledger.KindInvalid, "invalid_qty"},
		{"unknown reason", "A", ledger.StockAdjustment{Delta: 1, Reason: "theft", IdempotencyKey: "k5"}, ledger.KindInvalid, "invalid_reason"},
		{"bad key", "A", ledger.StockAdjustment{Delta: 1, Reason: "other", IdempotencyKey: "a b"}, ledger.KindInvalid, "invalid_idempotency_key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.l.AdjustStock(e.ctx, tc.barcode, tc.adj)
			if le := refusal(t, err); le.Kind != tc.kind || le.Code != tc.code {
				t.Errorf("refusal %v, want %s %s", le, tc.kind, tc.code)
			}
		})
	}
	if got := e.stock("A"); got != 2 {
		t.Errorf("stock %d after refusals, want 2", got)
	}
	if p, _ := e.j.PendingAdjustments(e.ctx, 10); len(p) != 1 {
		t.Errorf("%d adjustments journaled, want 1", len(p))
	}
}
