package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/strictjson"
	"github.com/posedge/posedge/sync/wire"
)

// Fuzz targets of every decoder of a till's input. Each checks an
// invariant of what it accepts, not only that it does not panic:
// the lines' checked sum is the total and at most max_sale_cents (by
// sync/wire's CheckAmounts, the HQ side's own check), plain encoding/json
// reads the body the same way (no duplicate or case-folded key changed
// its meaning), and the request re-encodes to JSON that decodes back to
// itself: what the ledger stores and fingerprints.

// fuzzMax is a small max_sale_cents so the fuzzer reaches its edges.
const fuzzMax = 1_000_000

var fuzzBounds = ledger.Bounds{MaxSaleCents: fuzzMax, Now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}

func checkSale(t *testing.T, s ledger.SaleRequest) {
	t.Helper()
	lines := make([]wire.Line, len(s.Lines))
	for i, l := range s.Lines {
		lines[i] = wire.Line{Barcode: l.Barcode, Qty: l.Qty, PriceCents: l.PriceCents}
		if !barcodeBytesOK(l.Barcode) {
			t.Fatalf("accepted barcode %q", l.Barcode)
		}
	}
	if err := wire.CheckAmounts(lines, s.TotalCents, fuzzMax); err != nil {
		t.Fatalf("accepted a sale HQ refuses: %v (%+v)", err, s)
	}
	if s.OccurredAt != nil {
		at, err := time.Parse(time.RFC3339Nano, *s.OccurredAt)
		if err != nil || at.Before(fuzzBounds.Now.Add(-ledger.OccurredAtPast)) || at.After(fuzzBounds.Now.Add(ledger.OccurredAtFuture)) ||
			at.UTC().Format(time.RFC3339Nano) != *s.OccurredAt {
			t.Fatalf("accepted occurred_at %q", *s.OccurredAt)
		}
	}
	// Re-encoded as the ledger stores and fingerprints it, it reads back
	// to the same sale and is accepted again.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	again, e := checkedSale(b, fuzzBounds)
	if e != nil || !reflect.DeepEqual(normalSale(again), normalSale(s)) || ledger.Fingerprint(again) != ledger.Fingerprint(s) {
		t.Fatalf("re-encoded sale %s reads as %+v %v, was %+v", b, again, e, s)
	}
}

// normalSale drops the difference between nil and empty optional fields.
func normalSale(s ledger.SaleRequest) ledger.SaleRequest {
	if len(s.Lines) == 0 {
		s.Lines = nil
	}
	return s
}

func barcodeBytesOK(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// plainReadsTheSame: encoding/json alone (case-insensitive, last duplicate
// wins) reads an accepted body's money as the strict decoder did.
func plainReadsTheSame(t *testing.T, body []byte, total int64, lines []ledger.Line) {
	t.Helper()
	if err := strictjson.Check(body, nil); err != nil {
		t.Fatalf("accepted a body with a duplicate key: %v", err)
	}
	var plain struct {
		TotalCents int64         `json:"total_cents"`
		Lines      []ledger.Line `json:"lines"`
	}
	if err := json.Unmarshal(body, &plain); err != nil {
		t.Fatalf("accepted a body encoding/json refuses: %v", err)
	}
	if plain.TotalCents != total || len(plain.Lines) != len(lines) {
		t.Fatalf("encoding/json reads total %d, %d lines; accepted %d, %d lines", plain.TotalCents, len(plain.Lines), total, len(lines))
	}
	for i := range lines {
		if plain.Lines[i].Qty != lines[i].Qty || plain.Lines[i].Barcode != lines[i].Barcode {
			t.Fatalf("encoding/json reads line %d as %+v; accepted %+v", i, plain.Lines[i], lines[i])
		}
	}
}

func saleSeeds(f *testing.F) {
	for _, s := range []string{
		`{"lines":[{"barcode":"A","qty":2,"price_cents":350}],"total_cents":700,"tender":"cash"}`,
		`{"lines":[{"barcode":"A","qty":1,"qty":40,"price_cents":100}],"total_cents":100,"tender":"cash"}`,
		`{"lines":[{"barcode":"A","qty":1,"price_cents":100}],"TOTAL_CENTS":100,"tender":"cash"}`,
		`{"lines":[{"barcode":"A","qty":1,"price_cents":1000000}],"total_cents":1000000,"tender":"card","occurred_at":"2026-11-30T12:04:59+00:00"}`,
		`{"lines":[{"barcode":"A","qty":1,"price_cents":100000000000000000}],"total_cents":100000000000000000,"tender":"cash"}`,
		`{"lines":[{"barcode":"A","qty":1,"price_cents":9007199254740993}],"total_cents":9007199254740993,"tender":"cash"}`,
		`{"lines":[{"barcode":"ov","qty":1000000,"price_cents":1000000000000},{"barcode":"ov","qty":1000000,"price_cents":446744073709}],"total_cents":5000100,"tender":"cash"}`,
		`{"lines":[{"barcode":"A","qty":1,"price_cents":1}],"total_cents":1,"tender":"cash","occurred_at":"2026-10-21T12:00:00Z"}`,
		"{\"lines\":[{\"barcode\":\"A\",\"qty\":1,\"price_cents\":1}],\"total_cent\u017f\":1,\"tender\":\"cash\"}",
	} {
		f.Add([]byte(s))
	}
}

func FuzzParseSale(f *testing.F) {
	saleSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		s, e := checkedSale(body, fuzzBounds)
		if e != nil {
			if e.Kind != ledger.KindInvalid || e.Code == "" {
				t.Fatalf("refusal %+v", e)
			}
			return
		}
		checkSale(t, s)
		plainReadsTheSame(t, body, s.TotalCents, s.Lines)
	})
}

func FuzzParseRefund(f *testing.F) {
	for _, s := range []string{
		`{"original_flow_no":"1000000000000001","lines":[{"barcode":"A","qty":1}],"total_cents":350}`,
		`{"original_flow_no":"1000000000000001","lines":[{"barcode":"A","qty":1,"qty":3}],"total_cents":350}`,
		`{"original_flow_no":"1000000000000001","lines":[{"barcode":"A","qty":1,"price_cents":5}],"total_cents":5}`,
		`{"original_flow_no":"1","lines":[{"barcode":"A","qty":1}],"Total_Cents":100000000000000000}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, e := checkedRefund(body, fuzzBounds)
		if e != nil {
			if e.Kind != ledger.KindInvalid || e.Code == "" {
				t.Fatalf("refusal %+v", e)
			}
			return
		}
		if r.TotalCents < 0 || r.TotalCents > fuzzMax || !ledger.ValidFlowNo(r.OriginalFlowNo) || len(r.Lines) == 0 || len(r.Lines) > ledger.MaxLines {
			t.Fatalf("accepted refund %+v", r)
		}
		lines := make([]ledger.Line, len(r.Lines))
		for i, l := range r.Lines {
			if !barcodeBytesOK(l.Barcode) || l.Qty < 1 || l.Qty > ledger.MaxQty {
				t.Fatalf("accepted refund line %+v", l)
			}
			lines[i] = ledger.Line{Barcode: l.Barcode, Qty: l.Qty}
		}
		plainReadsTheSame(t, body, r.TotalCents, lines)
		b, _ := json.Marshal(r)
		again, e := checkedRefund(b, fuzzBounds)
		if e != nil || !reflect.DeepEqual(again, r) || ledger.Fingerprint(again) != ledger.Fingerprint(r) {
			t.Fatalf("re-encoded refund %s reads as %+v %v", b, again, e)
		}
	})
}

func FuzzParseBatch(f *testing.F) {
	f.Add([]byte(`{"sales":[{"idempotency_key":"b-1","lines":[{"barcode":"A","qty":1,"price_cents":1}],"total_cents":1,"tender":"cash"},{"lines":[]},{"idempotency_key":"b 3"}]}`))
	f.Add([]byte(`{"sales":[{"idempotency_key":"b-1","idempotency_key":"b-2","lines":[{"barcode":"A","qty":1,"price_cents":1}],"total_cents":1,"tender":"cash"}]}`))
	f.Add([]byte(`{"sales":[{"idempotency_key":"w","lines":[{"barcode":"ov","qty":1000000,"price_cents":1000000000000},{"barcode":"ov","qty":1,"price_cents":5000000}],"total_cents":5000100,"tender":"cash","occurred_at":"2026-11-30T11:00:00Z"}]}`))
	f.Add([]byte(`{"sales":[],"sales":[{}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		sales, e := checkedBatch(body, fuzzBounds)
		if e != nil {
			if e.Kind != ledger.KindInvalid || e.Code == "" {
				t.Fatalf("refusal %+v", e)
			}
			return
		}
		var raw struct {
			Sales []json.RawMessage `json:"sales"`
		}
		if err := json.Unmarshal(body, &raw); err != nil || len(raw.Sales) != len(sales) || len(sales) == 0 || len(sales) > ledger.MaxBatchSales {
			t.Fatalf("%d results for %d sales (%v)", len(sales), len(raw.Sales), err)
		}
		for i, s := range sales {
			if s.Err != nil {
				if s.Err.Kind != ledger.KindInvalid || s.Err.Code == "" {
					t.Fatalf("sale %d refusal %+v", i, s.Err)
				}
				continue
			}
			if !ledger.ValidKey(s.Key) {
				t.Fatalf("sale %d accepted with key %q", i, s.Key)
			}
			checkSale(t, s.Sale)
			plainReadsTheSame(t, raw.Sales[i], s.Sale.TotalCents, s.Sale.Lines)
			var k struct {
				Key string `json:"idempotency_key"`
			}
			if json.Unmarshal(raw.Sales[i], &k); k.Key != s.Key {
				t.Fatalf("sale %d: encoding/json reads key %q, accepted %q", i, k.Key, s.Key)
			}
		}
	})
}

func FuzzIdempotencyKey(f *testing.F) {
	for _, k := range []string{"k-1", "pt_0123456789abcdef0123456789abcdef", "a b", "", strings.Repeat("k", 65), "ok:.-_", "é", "k\x00"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		r, _ := http.NewRequest("POST", "/v1/sales", nil)
		r.Header["Idempotency-Key"] = []string{key}
		got, e := idemKey(r)
		want := len(key) >= 1 && len(key) <= 64
		for i := 0; i < len(key) && want; i++ {
			c := key[i]
			want = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:-", c) >= 0
		}
		switch {
		case want && (e != nil || got != key):
			t.Fatalf("key %q refused or changed: %q %v", key, got, e)
		case !want && e == nil:
			t.Fatalf("key %q accepted", key)
		case !want && key == "" && e.Code != "idempotency_key_missing":
			t.Fatalf("empty key: %v", e)
		case !want && key != "" && e.Code != "invalid_idempotency_key":
			t.Fatalf("key %q: %v", key, e)
		}
		if want && ledger.IsTokenForm(key) != (len(key) == 35 && strings.HasPrefix(key, "pt_") && strings.Trim(key[3:], "0123456789abcdefABCDEF") == "") {
			t.Fatalf("token form of %q", key)
		}
	})
}

func FuzzBarcode(f *testing.F) {
	for _, b := range []string{"6901234567890", "A", "a b", "", strings.Repeat("9", 65), "ov", "x:y", "é", "a\x00", "*"} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, barcode string) {
		ok := ledger.ValidBarcode(barcode)
		if ok != barcodeBytesOK(barcode) {
			t.Fatalf("ValidBarcode(%q) = %v", barcode, ok)
		}
		// A barcode in a sale is accepted exactly when it is valid, and
		// then stored byte for byte: JSON needs no escape for it, and it
		// cannot end a Redis key name early (no ':').
		body, _ := json.Marshal(map[string]any{"lines": []map[string]any{{"barcode": barcode, "qty": 1, "price_cents": 1}},
			"total_cents": 1, "tender": "cash"})
		s, e := checkedSale(body, fuzzBounds)
		if ok != (e == nil) {
			t.Fatalf("barcode %q valid %v, sale refusal %v", barcode, ok, e)
		}
		if !ok {
			if e.Code != "invalid_barcode" {
				t.Fatalf("barcode %q: %v", barcode, e)
			}
			return
		}
		if s.Lines[0].Barcode != barcode || strings.Contains(barcode, ":") {
			t.Fatalf("barcode %q stored as %q", barcode, s.Lines[0].Barcode)
		}
		if enc, _ := json.Marshal(barcode); string(enc) != `"`+barcode+`"` {
			t.Fatalf("barcode %q encodes as %s", barcode, enc)
		}
	})
}

// FuzzParseStockAdjustment: an adjustment body is accepted only when a
// plain JSON reader finds the same delta, reason and key in it, and the
// delta is a whole number within the ledger's bound.
func FuzzParseStockAdjustment(f *testing.F) {
	for _, s := range []string{
		`{"delta":12,"reason":"receiving","idempotency_key":"rcv-1"}`,
		`{"delta":-3,"delta":300,"reason":"count","idempotency_key":"c-1"}`,
		`{"Delta":5,"reason":"count","idempotency_key":"c-1"}`,
		`{"delta":1e3,"reason":"count","idempotency_key":"c-1"}`,
		`{"delta":"5","reason":"count","idempotency_key":"c-1"}`,
		`{"delta":9223372036854775807,"reason":"count","idempotency_key":"c-1"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		adj, e := parseStockAdjustment(body)
		if e != nil {
			if e.Kind != ledger.KindInvalid || e.Code == "" {
				t.Fatalf("refusal %+v", e)
			}
			return
		}
		if adj.Delta < -ledger.MaxStockDelta || adj.Delta > ledger.MaxStockDelta {
			t.Fatalf("accepted delta %d outside ±%d", adj.Delta, ledger.MaxStockDelta)
		}
		var plain ledger.StockAdjustment
		if err := json.Unmarshal(body, &plain); err != nil {
			t.Fatalf("accepted %q, which a plain reader refuses: %v", body, err)
		}
		if plain != adj {
			t.Fatalf("accepted %q as %+v, a plain reader reads %+v", body, adj, plain)
		}
	})
}
