package ledger_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/offline/journal"
)

var normalFlow = regexp.MustCompile(`^1[0-9]{15}$`)

// A sale takes stock, counts in the day's counters and is journaled,
// applied, under the flow number its body carries.
func TestSale(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 10)
	s := ledger.SaleRequest{Lines: []ledger.Line{{Barcode: "A", Qty: 2, PriceCents: 150}, {Barcode: "A", Qty: 1, PriceCents: 150}},
		TotalCents: 450, Tender: "card", ReceiptNo: "R-1"}
	r := e.mustSale("T01", "k1", s)
	if !normalFlow.MatchString(r.FlowNo) || r.Replayed {
		t.Fatalf("result %+v", r)
	}
	var b map[string]any
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatal(err)
	}
	if b["flow_no"] != r.FlowNo || b["total_cents"] != 450.0 || b["tender"] != "card" || b["kind"] != "sale" || b["receipt_no"] != "R-1" {
		t.Fatalf("body %s", r.Body)
	}
	if got := e.stock("A"); got != 7 {
		t.Fatalf("stock %d, want 7", got)
	}
	if got := e.today(); got != (ledger.Totals{Sales: 1, SalesCents: 450}) {
		t.Fatalf("day totals %+v", got)
	}
	jt := e.journaled("T01", "k1")
	if jt == nil || jt.FlowNo != r.FlowNo || jt.Mode != journal.ModeNormal || !jt.Applied || string(jt.Body) != string(r.Body) {
		t.Fatalf("journal row %+v", jt)
	}
	got, err := e.l.Get(e.ctx, r.FlowNo)
	if err != nil || string(got) != string(r.Body) {
		t.Fatalf("Get: %s %v", got, err)
	}
}

// A refused sale changes neither stock, counters nor the journal, and
// says why with the contract's code and a kind the caller maps.
func TestSaleRefusalsChangeNothing(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 2)
	tests := []struct {
		name string
		sale ledger.SaleRequest
		kind ledger.Kind
		code string
	}{
		{"unknown item", sale1("NOPE", 1, 150), ledger.KindUnprocessable, "unknown_item"},
		{"not enough stock", sale1("A", 3, 150), ledger.KindConflict, "insufficient_stock"},
		{"total mismatch", ledger.SaleRequest{Lines: []ledger.Line{{Barcode: "A", Qty: 1, PriceCents: 150}}, TotalCents: 100, Tender: "cash"},
			ledger.KindInvalid, "total_mismatch"},
		{"no lines", ledger.SaleRequest{Tender: "cash"}, ledger.KindInvalid, "invalid_lines"},
		{"unknown tender", ledger.SaleRequest{Lines: []ledger.Line{{Barcode: "A", Qty: 1, PriceCents: 150}}, TotalCents: 150, Tender: "iou"},
			ledger.KindInvalid, "invalid_tender"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("r%d", i)
			_, err := e.sale("T01", key, tt.sale)
			le := refusal(t, err)
			if le.Kind != tt.kind || le.Code != tt.code {
				t.Fatalf("refusal %v, want %s %s", le, tt.kind, tt.code)
			}
			if got := e.stock("A"); got != 2 {
				t.Fatalf("stock %d, want 2", got)
			}
			if got := e.today(); got != (ledger.Totals{}) {
				t.Fatalf("day totals %+v", got)
			}
			if jt := e.journaled("T01", key); jt != nil {
				t.Fatalf("journaled: %+v", jt)
			}
		})
	}
	if e.l.Degraded() {
		t.Fatal("a refusal switched the ledger to degraded mode")
	}
}

// A refund puts stock back at the original prices and tender, never more
// than what is left of the sale.
func TestRefund(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 10)
	e.putItem("B", 99, 10)
	s := e.mustSale("T01", "s1", ledger.SaleRequest{Lines: []ledger.Line{{Barcode: "A", Qty: 3, PriceCents: 150}, {Barcode: "B", Qty: 1, PriceCents: 99}},
		TotalCents: 549, Tender: "mobile"})

	r, err := e.l.Refund(e.ctx, "T02", "f1", ledger.RefundRequest{OriginalFlowNo: s.FlowNo, Lines: []ledger.RefundLine{{Barcode: "A", Qty: 2}}, TotalCents: 300})
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Lines []ledger.Line `json:"lines"`
	}
	_ = json.Unmarshal(r.Body, &b)
	if jt := e.journaled("T02", "f1"); jt == nil || jt.Kind != "refund" || jt.Tender != "mobile" || jt.OriginalFlowNo != s.FlowNo || jt.TotalCents != 300 {
		t.Fatalf("journal row %+v", jt)
	}
	if len(b.Lines) != 1 || b.Lines[0] != (ledger.Line{Barcode: "A", Qty: 2, PriceCents: 150}) {
		t.Fatalf("refund lines %s", r.Body)
	}
	if got := e.stock("A"); got != 9 {
		t.Fatalf("stock %d, want 9", got)
	}
	if got := e.today(); got != (ledger.Totals{Sales: 1, SalesCents: 549, Refunds: 1, RefundCents: 300}) {
		t.Fatalf("day totals %+v", got)
	}

	tests := []struct {
		name string
		req  ledger.RefundRequest
		kind ledger.Kind
		code string
	}{
		{"more than is left", ledger.RefundRequest{OriginalFlowNo: s.FlowNo, Lines: []ledger.RefundLine{{Barcode: "A", Qty: 2}}, TotalCents: 300},
			ledger.KindConflict, "refund_exceeds_sale"},
		{"barcode not in the sale", ledger.RefundRequest{OriginalFlowNo: s.FlowNo, Lines: []ledger.RefundLine{{Barcode: "C", Qty: 1}}, TotalCents: 1},
			ledger.KindConflict, "refund_exceeds_sale"},
		{"no such sale", ledger.RefundRequest{OriginalFlowNo: "1999999999999999", Lines: []ledger.RefundLine{{Barcode: "A", Qty: 1}}, TotalCents: 150},
			ledger.KindNotFound, "sale_not_found"},
		{"total not at the original price", ledger.RefundRequest{OriginalFlowNo: s.FlowNo, Lines: []ledger.RefundLine{{Barcode: "B", Qty: 1}}, TotalCents: 100},
			ledger.KindInvalid, "total_mismatch"},
		{"malformed flow number", ledger.RefundRequest{OriginalFlowNo: "x1", Lines: []ledger.RefundLine{{Barcode: "B", Qty: 1}}, TotalCents: 99},
			ledger.KindInvalid, "invalid_flow_no"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.l.Refund(e.ctx, "T02", fmt.Sprintf("bad%d", i), tt.req)
			if le := refusal(t, err); le.Kind != tt.kind || le.Code != tt.code {
				t.Fatalf("refusal %v, want %s %s", le, tt.kind, tt.code)
			}
			if a, b := e.stock("A"), e.stock("B"); a != 9 || b != 9 {
				t.Fatalf("stock A %d B %d, want 9 9", a, b)
			}
		})
	}
	if _, err := e.l.Refund(e.ctx, "T02", "f2", ledger.RefundRequest{OriginalFlowNo: s.FlowNo,
		Lines: []ledger.RefundLine{{Barcode: "A", Qty: 1}, {Barcode: "B", Qty: 1}}, TotalCents: 249}); err != nil {
		t.Fatalf("refund of the rest: %v", err)
	}
	if a, b := e.stock("A"), e.stock("B"); a != 10 || b != 10 {
		t.Fatalf("stock A %d B %d after refunding everything, want 10 10", a, b)
	}
}

// A batch records past sales whatever the stock and item master say; a
// sale refused on its own (it did not decode, or breaks a rule) leaves
// the others recorded.
func TestBatch(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("K1", 100, 1)
	decodeErr := ledger.Errorf(ledger.KindInvalid, "invalid_json", "malformed JSON")
	out := e.l.Batch(e.ctx, "T01", []ledger.BatchSale{
		{Key: "b1", Sale: sale1("K1", 3, 100)},
		{Key: "b2", Sale: sale1("NEVER-SEEN", 1, 5)},
		{Err: decodeErr},
		{Key: "b4", Sale: ledger.SaleRequest{Lines: []ledger.Line{{Barcode: "K1", Qty: 1, PriceCents: 100}}, TotalCents: 99, Tender: "cash"}},
	})
	if len(out) != 4 {
		t.Fatalf("%d results", len(out))
	}
	for i := 0; i < 2; i++ {
		if out[i].Err != nil || out[i].Result == nil || !normalFlow.MatchString(out[i].Result.FlowNo) {
			t.Fatalf("sale %d: %+v %v", i, out[i].Result, out[i].Err)
		}
	}
	if out[2].Err != decodeErr || out[2].Result != nil {
		t.Fatalf("sale 2: %+v %v", out[2].Result, out[2].Err)
	}
	if out[3].Err == nil || out[3].Err.Code != "total_mismatch" || out[3].Result != nil {
		t.Fatalf("sale 3: %+v %v", out[3].Result, out[3].Err)
	}
	if got := e.stock("K1"); got != -2 {
		t.Fatalf("stock %d, want -2 (a batch takes stock below zero)", got)
	}
	if got := e.today(); got != (ledger.Totals{Sales: 2, SalesCents: 305}) {
		t.Fatalf("day totals %+v", got)
	}
	again := e.l.Batch(e.ctx, "T01", []ledger.BatchSale{{Key: "b1", Sale: sale1("K1", 3, 100)}})
	if again[0].Err != nil || !again[0].Result.Replayed || string(again[0].Result.Body) != string(out[0].Result.Body) {
		t.Fatalf("batch replay: %+v %v", again[0].Result, again[0].Err)
	}
	if got := e.stock("K1"); got != -2 {
		t.Fatalf("stock %d after a replayed batch, want -2", got)
	}
}

// One key, one sale: a replay answers the first body and changes nothing,
// another body under the key is refused, and a retry while the first is
// still being processed is told to wait.
func TestIdempotency(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 10)
	first := e.mustSale("T01", "k1", sale1("A", 2, 150))

	again, err := e.sale("T01", "k1", sale1("A", 2, 150))
	if err != nil || !again.Replayed || string(again.Body) != string(first.Body) || again.FlowNo != first.FlowNo {
		t.Fatalf("replay: %+v %v", again, err)
	}
	_, err = e.sale("T01", "k1", sale1("A", 1, 150))
	if le := refusal(t, err); le.Kind != ledger.KindUnprocessable || le.Code != "idempotency_key_reused" {
		t.Fatalf("reused key: %v", le)
	}
	other := e.mustSale("T02", "k1", sale1("A", 2, 150)) // keys are per terminal
	if other.Replayed || other.FlowNo == first.FlowNo {
		t.Fatalf("another terminal's key k1 answered %+v", other)
	}
	if got := e.stock("A"); got != 6 {
		t.Fatalf("stock %d, want 6", got)
	}

	// Redis frozen for half a second (within its timeout): the call of k2
	// that comes first holds the key; one started meanwhile is told to wait.
	e.redis.StopAll()
	type outcome struct {
		r   *ledger.Result
		err error
	}
	results := make(chan outcome, 2)
	for i := 0; i < 2; i++ {
		go func() {
			r, err := e.sale("T01", "k2", sale1("A", 1, 150))
			results <- outcome{r, err}
		}()
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(400 * time.Millisecond)
	e.redis.ContAll()
	var done *ledger.Result
	var inProgress *ledger.Error
	for i := 0; i < 2; i++ {
		o := <-results
		if o.err == nil {
			done = o.r
			continue
		}
		if le := refusal(t, o.err); le.Code == "request_in_progress" {
			inProgress = le
		}
	}
	if done == nil || inProgress == nil {
		t.Fatalf("two calls of a key in flight: want one recorded and one request_in_progress, got %+v and %v", done, inProgress)
	}
	if inProgress.Kind != ledger.KindConflict || inProgress.RetryAfter != time.Second {
		t.Fatalf("in progress: %+v", inProgress)
	}
	if done.Replayed || !normalFlow.MatchString(done.FlowNo) {
		t.Fatalf("the call that held the key: %+v", done)
	}
	if e.l.Degraded() {
		t.Fatal("degraded after Redis thawed within its timeout")
	}
	if got := e.stock("A"); got != 5 {
		t.Fatalf("stock %d, want 5", got)
	}
}
