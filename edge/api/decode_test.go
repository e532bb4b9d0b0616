package api

import (
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
)

// decodeBounds are the bounds decoding tests check against: the default
// max_sale_cents, a fixed clock.
var decodeBounds = ledger.Bounds{MaxSaleCents: 100_000_000_000, Now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}

// checkedSale, checkedRefund and checkedBatch take a body as the server
// does: the API decodes it, the ledger's one validation refuses it.
func checkedSale(b []byte, bd ledger.Bounds) (ledger.SaleRequest, *ledger.Error) {
	s, e := parseSale(b)
	if e != nil {
		return ledger.SaleRequest{}, e
	}
	return s.Checked(bd)
}

func checkedRefund(b []byte, bd ledger.Bounds) (ledger.RefundRequest, *ledger.Error) {
	r, e := parseRefund(b)
	if e == nil {
		e = r.Validate(bd)
	}
	if e != nil {
		return ledger.RefundRequest{}, e
	}
	return r, nil
}

func checkedBatch(b []byte, bd ledger.Bounds) ([]ledger.BatchSale, *ledger.Error) {
	sales, e := parseBatch(b)
	if e != nil {
		return nil, e
	}
	for i := range sales {
		if sales[i].Err == nil {
			sales[i].Sale, sales[i].Err = sales[i].Sale.Checked(bd)
		}
	}
	return sales, nil
}

// Decoding turns a body into the ledger's types and lets their Validate
// choose the refusal; these are the cases where decoding and validation
// meet, each answered as the contract's one code.
func TestDecodeRefusals(t *testing.T) {
	const ok = `{"barcode":"A","qty":1,"price_cents":100}`
	tests := []struct {
		name, kind, body, code string
	}{
		{"missing qty", "sale", `{"lines":[{"barcode":"A","price_cents":100}],"total_cents":100,"tender":"cash"}`, "invalid_qty"},
		{"qty as a string", "sale", `{"lines":[{"barcode":"A","qty":"1","price_cents":100}],"total_cents":100,"tender":"cash"}`, "invalid_qty"},
		{"missing barcode", "sale", `{"lines":[{"qty":1,"price_cents":100}],"total_cents":100,"tender":"cash"}`, "invalid_barcode"},
		{"missing total", "sale", `{"lines":[` + ok + `],"tender":"cash"}`, "invalid_amount"},
		{"missing tender", "sale", `{"lines":[` + ok + `],"total_cents":100}`, "invalid_tender"},
		{"null total", "sale", `{"lines":[` + ok + `],"total_cents":null,"tender":"cash"}`, "invalid_amount"},
		{"empty occurred_at", "sale", `{"lines":[` + ok + `],"total_cents":100,"tender":"cash","occurred_at":""}`, "invalid_occurred_at"},
		{"a line before the bad total", "sale", `{"lines":[{"barcode":"A","qty":1.5,"price_cents":100}],"total_cents":"x","tender":"cash"}`, "invalid_qty"},
		{"trailing data", "sale", `{"lines":[` + ok + `],"total_cents":100,"tender":"cash"} {}`, "invalid_json"},
		{"priced refund line", "refund", `{"original_flow_no":"1000000000000001","lines":[{"barcode":"A","qty":1,"price_cents":5}],"total_cents":5}`, "unknown_field"},
		{"bad flow before a priced line", "refund", `{"original_flow_no":"x","lines":[{"barcode":"A","qty":1,"price_cents":5}],"total_cents":5}`, "invalid_flow_no"},
		{"bad earlier line before a priced line", "refund", `{"original_flow_no":"1","lines":[{"barcode":"A B","qty":1},{"barcode":"A","qty":1,"price_cents":5}],"total_cents":5}`, "invalid_barcode"},
		{"priced line before a bad total", "refund", `{"original_flow_no":"1","lines":[{"barcode":"A","qty":1,"price_cents":5}],"total_cents":-5}`, "unknown_field"},
		{"no sales", "batch", `{"sales":[]}`, "batch_too_large"},
		{"duplicate qty", "sale", `{"lines":[{"barcode":"A","qty":1,"qty":40,"price_cents":100}],"total_cents":100,"tender":"cash"}`, "invalid_json"},
		{"duplicate total", "sale", `{"lines":[` + ok + `],"total_cents":100,"total_cents":100,"tender":"cash"}`, "invalid_json"},
		{"duplicate but for case", "sale", `{"lines":[` + ok + `],"total_cents":100,"tender":"cash","Tender":"cash"}`, "invalid_json"},
		{"TOTAL_CENTS", "sale", `{"lines":[` + ok + `],"TOTAL_CENTS":100,"tender":"cash"}`, "unknown_field"},
		{"Barcode", "sale", `{"lines":[{"Barcode":"A","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash"}`, "unknown_field"},
		{"occurred_at 2 h ahead", "sale", `{"lines":[` + ok + `],"total_cents":100,"tender":"cash","occurred_at":"2026-11-30T14:00:00Z"}`, "invalid_occurred_at"},
		{"occurred_at 40 d back", "sale", `{"lines":[` + ok + `],"total_cents":100,"tender":"cash","occurred_at":"2026-10-21T12:00:00Z"}`, "invalid_occurred_at"},
		{"refund duplicate flow", "refund", `{"original_flow_no":"1","original_flow_no":"2","lines":[{"barcode":"A","qty":1}],"total_cents":5}`, "invalid_json"},
		{"refund Qty", "refund", `{"original_flow_no":"1","lines":[{"barcode":"A","Qty":1}],"total_cents":5}`, "unknown_field"},
		{"refund total above max", "refund", `{"original_flow_no":"1","lines":[{"barcode":"A","qty":1}],"total_cents":100000000001}`, "invalid_amount"},
		{"batch duplicate sales", "batch", `{"sales":[],"sales":[]}`, "invalid_json"},
		{"batch SALES", "batch", `{"SALES":[]}`, "unknown_field"},
	}
	for _, tt := range tests {
		var code string
		switch tt.kind {
		case "sale":
			if _, e := checkedSale([]byte(tt.body), decodeBounds); e != nil {
				code = e.Code
			}
		case "refund":
			if _, e := checkedRefund([]byte(tt.body), decodeBounds); e != nil {
				code = e.Code
			}
		case "batch":
			if _, e := checkedBatch([]byte(tt.body), decodeBounds); e != nil {
				code = e.Code
			}
		}
		if code != tt.code {
			t.Errorf("%s: %q, want %q", tt.name, code, tt.code)
		}
	}
}

// A batch's sales are decoded one by one: a sale's own key problem
// refuses that sale only.
func TestDecodeBatchKeys(t *testing.T) {
	batch, e := parseBatch([]byte(`{"sales":[{"idempotency_key":"b-1","lines":[{"barcode":"A","qty":1,"price_cents":1}],"total_cents":1,"tender":"cash"},{"lines":[]},{"idempotency_key":"b 3"}]}`))
	if e != nil || len(batch) != 3 || batch[0].Err != nil || batch[0].Key != "b-1" ||
		batch[1].Err == nil || batch[1].Err.Code != "idempotency_key_missing" || batch[2].Err == nil || batch[2].Err.Code != "invalid_idempotency_key" {
		t.Fatalf("%+v %v", batch, e)
	}
}
