package moneycheck

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// at is the occurred_at of every transaction of the test histories.
var at = time.Date(2026, 12, 1, 14, 5, 0, 0, time.UTC)

func saleBody(flow, term string, total int64, lines []Line) []byte {
	b, _ := json.Marshal(map[string]any{"flow_no": flow, "store_id": "S001", "terminal_id": term, "kind": "sale", "total_cents": total, "tender": "cash", "lines": lines, "occurred_at": at})
	return b
}

func refundBody(flow, term, orig string, total int64, lines []Line) []byte {
	b, _ := json.Marshal(map[string]any{"flow_no": flow, "store_id": "S001", "terminal_id": term, "kind": "refund", "total_cents": total, "tender": "cash", "original_flow_no": orig, "lines": lines, "occurred_at": at})
	return b
}

var two = []Line{{Barcode: "A", Qty: 2, PriceCents: 350}}

func sale(term, key, flow string) Op {
	return Op{Terminal: term, Kind: "sale", Key: key, Lines: two, TotalCents: 700, Tender: "cash", Status: 201, Body: saleBody(flow, term, 700, two)}
}

func refund(term, key, flow, orig string, qty int64) Op {
	in := []Line{{Barcode: "A", Qty: qty}}
	out := []Line{{Barcode: "A", Qty: qty, PriceCents: 350}}
	return Op{Terminal: term, Kind: "refund", Key: key, Lines: in, TotalCents: 350 * qty, Original: orig, Status: 201, Body: refundBody(flow, term, orig, 350*qty, out)}
}

// good is a consistent history and its world; each case breaks one thing.
func good() ([]Op, World) {
	ops := []Op{sale("T01", "k1", "1"), sale("T01", "k1", "1"), sale("T02", "k2", "2"), refund("T02", "r1", "3", "1", 1)}
	hq := map[string][]byte{}
	for _, op := range ops {
		var a answer
		_ = json.Unmarshal(op.Body, &a)
		hq[a.FlowNo] = op.Body
	}
	return ops, World{
		InitialStock: map[string]int64{"A": 5},
		FinalStock:   map[string]int64{"A": 2},
		HQ:           hq,
		Terminals:    map[string]Counters{"T01": {Sales: 1, SalesCents: 700}, "T02": {Sales: 1, SalesCents: 700, Refunds: 1, RefundCents: 350}},
		Tenders:      map[string]Counters{"cash": {Sales: 2, SalesCents: 1400, Refunds: 1, RefundCents: 350}},
		Hours:        map[string]Counters{"14": {Sales: 2, SalesCents: 1400, Refunds: 1, RefundCents: 350}},
		Totals:       &Counters{Sales: 2, SalesCents: 1400, Refunds: 1, RefundCents: 350},
	}
}

func TestGoodHistoryPasses(t *testing.T) {
	ops, w := good()
	r, err := Check(ops, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if r.Told != 4 || r.Retries != 1 || r.Refunds != 1 {
		t.Fatalf("report %+v", r)
	}
}

func TestIndeterminateMayOrMayNotHappen(t *testing.T) {
	for _, atHQ := range []bool{false, true} {
		ops, w := good()
		lost := sale("T03", "k9", "9")
		body := lost.Body
		lost.Status, lost.Body = 0, nil
		ops = append(ops, lost)
		w.Terminals, w.Tenders, w.Hours, w.Totals, w.FinalStock = nil, nil, nil, nil, nil
		if atHQ {
			w.HQ["9"] = body
		}
		if _, err := Check(ops, w); err != nil {
			t.Fatalf("atHQ=%v: %v", atHQ, err)
		}
	}
}

func TestBrokenHistoriesFail(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(ops []Op, w *World) []Op
		want    string
	}{
		{"doubled sale", func(ops []Op, w *World) []Op {
			w.Terminals["T01"] = Counters{Sales: 2, SalesCents: 1400}
			return ops
		}, "counters"},
		{"doubled stock", func(ops []Op, w *World) []Op { w.FinalStock["A"] = 0; return ops }, "stock of A"},
		{"wrong total", func(ops []Op, w *World) []Op {
			ops[2].Body = saleBody("2", "T02", 800, two)
			w.HQ["2"] = ops[2].Body
			return ops
		}, "total 800"},
		{"missing HQ row", func(ops []Op, w *World) []Op { delete(w.HQ, "2"); return ops }, "not at HQ"},
		{"differing HQ body", func(ops []Op, w *World) []Op { w.HQ["2"] = append([]byte(" "), w.HQ["2"]...); return ops }, "differs at HQ"},
		{"extra HQ row", func(ops []Op, w *World) []Op { w.HQ["7"] = saleBody("7", "T09", 700, two); return ops }, "no till was told"},
		{"refund above sale", func(ops []Op, w *World) []Op {
			w.HQ, w.Terminals, w.Tenders, w.Hours, w.Totals, w.FinalStock = nil, nil, nil, nil, nil, nil
			return append(ops, refund("T01", "r2", "4", "1", 2))
		}, "exceed the sale"},
		{"reused flow number", func(ops []Op, w *World) []Op { ops[2].Body = saleBody("1", "T02", 700, two); return ops }, "given to two"},
		{"differing retry answer", func(ops []Op, w *World) []Op { ops[1].Body = saleBody("5", "T01", 700, two); return ops }, "different answer"},
		{"extra HQ row explained twice", func(ops []Op, w *World) []Op {
			lost := sale("T03", "k9", "9")
			w.HQ["9"], w.HQ["10"] = lost.Body, saleBody("10", "T03", 700, two)
			lost.Status, lost.Body = 504, nil
			w.Terminals, w.Tenders, w.Hours, w.Totals, w.FinalStock = nil, nil, nil, nil, nil
			return append(ops, lost)
		}, "no till was told"},
		{"refused key explains an HQ row", func(ops []Op, w *World) []Op {
			// A token sale timed out, then was answered token_invalid
			// (nothing charged), yet HQ holds it: a doubled charge once
			// the till sells again under its own key.
			lost := sale("T03", "tok", "9")
			w.HQ["9"] = lost.Body
			lost.Status, lost.Body = 0, nil
			refusedOp := lost
			refusedOp.Status, refusedOp.Body = 400, []byte(`{"error":{"code":"token_invalid"}}`)
			w.Terminals, w.Tenders, w.Hours, w.Totals, w.FinalStock = nil, nil, nil, nil, nil
			return append(ops, lost, refusedOp)
		}, "no till was told"},
		{"told key refused on a retry", func(ops []Op, w *World) []Op {
			again := ops[0]
			again.Status, again.Body = 422, []byte(`{"error":{"code":"idempotency_key_reused"}}`)
			return append(ops, again)
		}, "refused after it was told"},
		{"hourly counters off", func(ops []Op, w *World) []Op {
			w.Hours["14"] = Counters{Sales: 3, SalesCents: 2100, Refunds: 1, RefundCents: 350}
			return ops
		}, "hour 14"},
		{"counted in the wrong hour", func(ops []Op, w *World) []Op {
			w.Hours["15"], w.Hours["14"] = w.Hours["14"], Counters{}
			return ops
		}, "hour 14"},
		{"daily totals off", func(ops []Op, w *World) []Op {
			w.Totals = &Counters{Sales: 2, SalesCents: 1400}
			return ops
		}, "daily totals"},
		{"batch sale dated otherwise", func(ops []Op, w *World) []Op {
			ops[2].OccurredAt = at.Add(-time.Hour)
			return ops
		}, "occurred_at"},
		{"refused with stock on the shelf", func(ops []Op, w *World) []Op {
			// Two sales of two from five: one unit was always left, so a
			// sale of one unit refused for want of stock has no cause.
			one := []Line{{Barcode: "A", Qty: 1, PriceCents: 350}}
			return append(ops, Op{Terminal: "T03", Kind: "sale", Key: "k3", Lines: one, TotalCents: 350, Tender: "cash",
				Status: 409, Body: []byte(`{"error":{"code":"insufficient_stock","message":"not enough stock of A (1 left)"}}`)})
		}, "never left less stock"},
		{"stock negative", func(ops []Op, w *World) []Op {
			w.InitialStock["A"], w.FinalStock["A"] = 2, -1
			return ops
		}, "not enough stock must be refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ops, w := good()
			ops = c.breakIt(ops, &w)
			_, err := Check(ops, w)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// Scarce stock: four tills race for an item with stock 5 (two each). A
// normal-mode sale must be refused when stock is short; a degraded-mode
// or batch sale may take stock below zero (contract: not enforced).
func TestScarceStock(t *testing.T) {
	const deg = "2100000000000001" // node 1's first degraded flow number
	for _, c := range []struct {
		name  string
		third func(Op) Op // the third till's sale, the one past the stock
		final int64
		want  string
	}{
		{"normal sale past the stock", func(o Op) Op { return o }, -1, "not enough stock must be refused"},
		{"degraded sale past the stock", func(o Op) Op { o.Body = saleBody(deg, o.Terminal, 700, two); return o }, -1, ""},
		{"batch sale past the stock", func(o Op) Op { o.Batch = true; return o }, -1, ""},
		{"fourth till refused", nil, 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ops := []Op{sale("T01", "k1", "1"), sale("T02", "k2", "2")}
			if c.third != nil {
				ops = append(ops, c.third(sale("T03", "k3", "3")))
			}
			ops = append(ops, Op{Terminal: "T04", Kind: "sale", Key: "k4", Lines: two, TotalCents: 700, Tender: "cash",
				Status: 409, Body: []byte(`{"error":{"code":"insufficient_stock"}}`)})
			w := World{InitialStock: map[string]int64{"A": 5}, FinalStock: map[string]int64{"A": c.final}}
			_, err := Check(ops, w)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// A refused sale with an item of unknown initial stock is not judged:
// that item may have been the short one.
func TestRefusalWithAnItemOfUnknownStockIsNotJudged(t *testing.T) {
	ops, w := good()
	lines := []Line{{Barcode: "A", Qty: 1, PriceCents: 350}, {Barcode: "B", Qty: 1, PriceCents: 10}}
	ops = append(ops, Op{Terminal: "T03", Kind: "sale", Key: "k3", Lines: lines, TotalCents: 360, Tender: "cash",
		Status: 409, Body: []byte(`{"error":{"code":"insufficient_stock","message":"not enough stock of B (0 left)"}}`)})
	r, err := Check(ops, w)
	if err != nil {
		t.Fatalf("a refusal for an item of unknown stock was judged: %v", err)
	}
	if r.OutOfStock != 1 {
		t.Fatalf("OutOfStock = %d, want 1", r.OutOfStock)
	}
}
