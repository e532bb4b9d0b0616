package ledger_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/offline/journal"
)

// A barcode on several lines of the sale at different prices is refunded
// line by line in the original's order (docs/design.md, Refunds): the
// refunds of a sale never pay back more than it charged for the barcode,
// whatever their sequence (issue 22, finding 2: 10×X was refunded at the
// last line's price, 10000 for a sale of 1000).
func TestRefundPricedPerOriginalLine(t *testing.T) {
	nine := []ledger.Line{{Barcode: "X", Qty: 9, PriceCents: 0}, {Barcode: "X", Qty: 1, PriceCents: 1000}}
	tests := []struct {
		name   string
		steps  [][]ledger.RefundLine // one refund per step
		totals []int64               // the total each refund must be
		lines  [][]ledger.Line       // the lines each refund's body lists
	}{
		{"all at once", [][]ledger.RefundLine{{{Barcode: "X", Qty: 10}}}, []int64{1000},
			[][]ledger.Line{{{Barcode: "X", Qty: 9, PriceCents: 0}, {Barcode: "X", Qty: 1, PriceCents: 1000}}}},
		{"free units first, then the paid one", [][]ledger.RefundLine{{{Barcode: "X", Qty: 9}}, {{Barcode: "X", Qty: 1}}}, []int64{0, 1000},
			[][]ledger.Line{{{Barcode: "X", Qty: 9, PriceCents: 0}}, {{Barcode: "X", Qty: 1, PriceCents: 1000}}}},
		{"one by one", [][]ledger.RefundLine{{{Barcode: "X", Qty: 5}}, {{Barcode: "X", Qty: 4}, {Barcode: "X", Qty: 1}}}, []int64{0, 1000},
			[][]ledger.Line{{{Barcode: "X", Qty: 5, PriceCents: 0}}, {{Barcode: "X", Qty: 4, PriceCents: 0}, {Barcode: "X", Qty: 1, PriceCents: 1000}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, journal.Options{})
			e.putItem("X", 1000, 100)
			s := e.mustSale("T01", "s1", ledger.SaleRequest{Lines: nine, TotalCents: 1000, Tender: "cash"})
			var paid int64
			for i, st := range tt.steps {
				// The old pricing's total (every unit at the last price) is
				// refused and changes nothing.
				var q int64
				for _, l := range st {
					q += l.Qty
				}
				if tt.totals[i] != q*1000 {
					_, err := e.l.Refund(e.ctx, "T02", fmt.Sprintf("bad%d", i), ledger.RefundRequest{OriginalFlowNo: s.FlowNo, Lines: st, TotalCents: q * 1000})
					if le := refusal(t, err); le.Code != "total_mismatch" {
						t.Fatalf("refund %d at the last price: %v, want total_mismatch", i, le)
					}
				}
				r, err := e.l.Refund(e.ctx, "T02", fmt.Sprintf("r%d", i), ledger.RefundRequest{OriginalFlowNo: s.FlowNo, Lines: st, TotalCents: tt.totals[i]})
				if err != nil {
					t.Fatalf("refund %d of %d: %v", i, tt.totals[i], err)
				}
				var b struct {
					Lines []ledger.Line `json:"lines"`
				}
				if err := json.Unmarshal(r.Body, &b); err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(b.Lines) != fmt.Sprint(tt.lines[i]) {
					t.Fatalf("refund %d lines %v, want %v", i, b.Lines, tt.lines[i])
				}
				paid += tt.totals[i]
			}
			if got := e.today(); got.RefundCents != 1000 || paid != 1000 {
				t.Fatalf("refunded %d cents (day %+v), want 1000: the sale's charge for X", paid, got)
			}
			// Nothing is left: any further refund is refused and changes nothing.
			_, err := e.l.Refund(e.ctx, "T02", "more", ledger.RefundRequest{OriginalFlowNo: s.FlowNo, Lines: []ledger.RefundLine{{Barcode: "X", Qty: 1}}, TotalCents: 0})
			if le := refusal(t, err); le.Code != "refund_exceeds_sale" {
				t.Fatalf("refund beyond the sale: %v", le)
			}
			if got := e.stock("X"); got != 100 {
				t.Fatalf("stock %d, want 100", got)
			}
			if got := e.today(); got.RefundCents != 1000 {
				t.Fatalf("day %+v after a refused refund", got)
			}
		})
	}
}
