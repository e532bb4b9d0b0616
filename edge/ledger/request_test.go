package ledger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/cents"
)

func TestSaleValidate(t *testing.T) {
	line := func(b string, q, p int64) ledger.Line { return ledger.Line{Barcode: b, Qty: q, PriceCents: p} }
	sale := func(total int64, ls ...ledger.Line) ledger.SaleRequest {
		return ledger.SaleRequest{Lines: ls, TotalCents: total, Tender: "cash"}
	}
	many := make([]ledger.Line, ledger.MaxLines+1)
	for i := range many {
		many[i] = line("A", 1, 1)
	}
	withReceipt := sale(100, line("A", 1, 100))
	withReceipt.ReceiptNo = strings.Repeat("r", 65)
	badTime := sale(100, line("A", 1, 100))
	badTime.OccurredAt = new("yesterday")
	goodTime := sale(100, line("A", 1, 100))
	goodTime.OccurredAt = new("2026-11-30T10:00:00+02:00")
	at := func(t string) ledger.SaleRequest {
		s := sale(100, line("A", 1, 100))
		s.OccurredAt = new(t)
		return s
	}
	// The batch: 21 lines whose qty × price sum to 2^64 + 5,000,100.
	var wrap []ledger.Line
	for i := 0; i < 18; i++ {
		wrap = append(wrap, line("ov", 1000000, 1000000000000))
	}
	wrap = append(wrap, line("ov", 1000000, 446744073709), line("ov", 1, 551716), line("ov", 1, 5000000))
	const max = int64(100_000_000_000)
	// Lines each within max_sale_cents whose sum is above it.
	half := sale(max+1, line("A", 1, max/2+1), line("B", 1, max/2))
	bounds := ledger.Bounds{MaxSaleCents: max, Now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	tests := []struct {
		name string
		s    ledger.SaleRequest
		code string // "" = valid
	}{
		{"valid", sale(350, line("A", 2, 100), line("B", 1, 150)), ""},
		{"free item", sale(0, line("A", 1, 0)), ""},
		{"with time", goodTime, ""},
		{"no lines", sale(0), "invalid_lines"},
		{"too many lines", sale(int64(len(many)), many...), "invalid_lines"},
		{"bad barcode", sale(100, line("A B", 1, 100)), "invalid_barcode"},
		{"zero qty", sale(0, line("A", 0, 100)), "invalid_qty"},
		{"qty above the bound", sale(100, line("A", ledger.MaxQty+1, 1)), "invalid_qty"},
		{"negative price", sale(-100, line("A", 1, -100)), "invalid_amount"},
		{"price above the bound", sale(cents.MaxItemPrice+1, line("A", 1, cents.MaxItemPrice+1)), "invalid_amount"},
		{"negative total", sale(-1, line("A", 1, 0)), "invalid_amount"},
		{"total mismatch", sale(100, line("A", 2, 100)), "total_mismatch"},
		{"first broken rule wins", sale(5, line("A B", 0, -1)), "invalid_barcode"},
		{"tender", ledger.SaleRequest{Lines: []ledger.Line{line("A", 1, 1)}, TotalCents: 1, Tender: "iou"}, "invalid_tender"},
		{"receipt too long", withReceipt, "invalid_receipt_no"},
		{"occurred_at not RFC3339", badTime, "invalid_occurred_at"},
		{"price at max_sale_cents", sale(max, line("A", 1, max)), ""},
		{"price above max_sale_cents", sale(max+1, line("A", 1, max+1)), "invalid_amount"},
		{"line above max_sale_cents", sale(max+1, line("A", 2, max/2+1)), "invalid_amount"},
		{"total above max_sale_cents", sale(max+1, line("A", 1, 1)), "invalid_amount"},
		{"sum of lines above max_sale_cents", half, "invalid_amount"},
		{"sum wrapping 2^64", sale(5000100, wrap...), "invalid_amount"},
		{"total 1e17", sale(100_000_000_000_000_000, line("A", 1, 100_000_000_000_000_000)), "invalid_amount"},
		{"total 2^53+1", sale(9007199254740993, line("A", 1, 9007199254740993)), "invalid_amount"},
		{"occurred_at 5 minutes ahead", at("2026-11-30T12:05:00Z"), ""},
		{"occurred_at 2 hours ahead", at("2026-11-30T14:00:00Z"), "invalid_occurred_at"},
		{"occurred_at 30 days back", at("2026-10-31T12:00:00Z"), ""},
		{"occurred_at 40 days back", at("2026-10-21T12:00:00Z"), "invalid_occurred_at"},
	}
	for _, tt := range tests {
		e := tt.s.Validate(bounds)
		switch {
		case tt.code == "" && e != nil:
			t.Errorf("%s: refused %v", tt.name, e)
		case tt.code != "" && (e == nil || e.Code != tt.code || e.Kind != ledger.KindInvalid):
			t.Errorf("%s: got %v, want invalid %s", tt.name, e, tt.code)
		}
	}
}

func TestRefundValidate(t *testing.T) {
	tests := []struct {
		name string
		r    ledger.RefundRequest
		code string
	}{
		{"valid", ledger.RefundRequest{OriginalFlowNo: "1000000000000001", Lines: []ledger.RefundLine{{Barcode: "A", Qty: 1}}, TotalCents: 5}, ""},
		{"flow number", ledger.RefundRequest{OriginalFlowNo: "", Lines: []ledger.RefundLine{{Barcode: "A", Qty: 1}}}, "invalid_flow_no"},
		{"no lines", ledger.RefundRequest{OriginalFlowNo: "1"}, "invalid_lines"},
		{"qty", ledger.RefundRequest{OriginalFlowNo: "1", Lines: []ledger.RefundLine{{Barcode: "A", Qty: -1}}}, "invalid_qty"},
		{"total", ledger.RefundRequest{OriginalFlowNo: "1", Lines: []ledger.RefundLine{{Barcode: "A", Qty: 1}}, TotalCents: -1}, "invalid_amount"},
		{"total above max_sale_cents", ledger.RefundRequest{OriginalFlowNo: "1", Lines: []ledger.RefundLine{{Barcode: "A", Qty: 1}}, TotalCents: 1001}, "invalid_amount"},
		{"total at max_sale_cents", ledger.RefundRequest{OriginalFlowNo: "1", Lines: []ledger.RefundLine{{Barcode: "A", Qty: 1}}, TotalCents: 1000}, ""},
	}
	for _, tt := range tests {
		e := tt.r.Validate(ledger.Bounds{MaxSaleCents: 1000})
		if (tt.code == "") != (e == nil) || (e != nil && e.Code != tt.code) {
			t.Errorf("%s: got %v, want %q", tt.name, e, tt.code)
		}
	}
}

// Checked is the sale as the ledger records and fingerprints it: one
// instant sent with two offsets is one request.
func TestSaleCheckedNormalizesOccurredAt(t *testing.T) {
	bounds := ledger.Bounds{Now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	sale := func(at string) ledger.SaleRequest {
		return ledger.SaleRequest{Lines: []ledger.Line{{Barcode: "A", Qty: 2, PriceCents: 100}}, TotalCents: 200, Tender: "card", OccurredAt: new(at)}
	}
	a, e := sale("2026-11-30T10:00:00+02:00").Checked(bounds)
	if e != nil || a.OccurredAt == nil || *a.OccurredAt != "2026-11-30T08:00:00Z" {
		t.Fatalf("%+v %v", a, e)
	}
	b, e := sale("2026-11-30T08:00:00Z").Checked(bounds)
	if e != nil || ledger.Fingerprint(a) != ledger.Fingerprint(b) {
		t.Fatalf("one instant, two fingerprints: %+v %+v %v", a, b, e)
	}
	if _, e := sale("").Checked(bounds); e == nil || e.Code != "invalid_occurred_at" {
		t.Fatalf("an empty occurred_at: %v, want invalid_occurred_at", e)
	}
}

// A refund line the till priced is refused where its price stands in the
// body: after the flow number and the lines before it, before the total.
func TestRefundValidatePricedLine(t *testing.T) {
	priced := []ledger.RefundLine{{Barcode: "A", Qty: 1}, {Barcode: "B", Qty: 1, Priced: true}}
	tests := []struct {
		name string
		r    ledger.RefundRequest
		code string
	}{
		{"priced line", ledger.RefundRequest{OriginalFlowNo: "1", Lines: priced, TotalCents: 5}, "unknown_field"},
		{"priced line before a bad total", ledger.RefundRequest{OriginalFlowNo: "1", Lines: priced, TotalCents: -5}, "unknown_field"},
		{"bad flow number first", ledger.RefundRequest{OriginalFlowNo: "x", Lines: priced, TotalCents: 5}, "invalid_flow_no"},
		{"bad earlier line first", ledger.RefundRequest{OriginalFlowNo: "1", Lines: []ledger.RefundLine{{Barcode: "A B", Qty: 1}, {Barcode: "B", Qty: 1, Priced: true}}}, "invalid_barcode"},
	}
	for _, tt := range tests {
		if e := tt.r.Validate(ledger.Bounds{MaxSaleCents: 1000}); e == nil || e.Code != tt.code {
			t.Errorf("%s: got %v, want %q", tt.name, e, tt.code)
		}
	}
}
