package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"testing"

	"github.com/posedge/posedge/internal/cents"
)

// bigCheck is CheckAmounts computed another way, in arbitrary precision:
// the oracle the fuzz targets compare with.
func bigCheck(lines []Line, total, maxCents int64) bool {
	bmax := big.NewInt(maxCents)
	if total < 0 || big.NewInt(total).Cmp(bmax) > 0 {
		return false
	}
	sum := new(big.Int)
	for _, l := range lines {
		if l.Qty <= 0 || l.PriceCents < 0 || big.NewInt(l.PriceCents).Cmp(bmax) > 0 {
			return false
		}
		line := new(big.Int).Mul(big.NewInt(l.Qty), big.NewInt(l.PriceCents))
		if line.Cmp(bmax) > 0 {
			return false
		}
		sum.Add(sum, line)
	}
	return sum.Cmp(big.NewInt(total)) == 0
}

// FuzzCheckAmounts: CheckAmounts accepts exactly what arbitrary-precision
// arithmetic accepts, for amounts anywhere in int64 (two lines, so that
// sums of products that wrap are reachable).
func FuzzCheckAmounts(f *testing.F) {
	f.Add(int64(1), int64(700), int64(2), int64(150), int64(1000), cents.DefaultMaxSaleCents)
	f.Add(int64(1000000), int64(1000000000000), int64(1), int64(0), int64(0), int64(math.MaxInt64))
	f.Add(int64(3), int64(3074457345618258603), int64(1), int64(-1), int64(-7), int64(math.MaxInt64))
	f.Add(int64(2), int64(math.MaxInt64/2+1), int64(1), int64(0), int64(0), int64(math.MaxInt64))
	f.Add(int64(1), cents.DefaultMaxSaleCents, int64(1), int64(1), cents.DefaultMaxSaleCents+1, cents.DefaultMaxSaleCents)
	f.Fuzz(func(t *testing.T, q1, p1, q2, p2, total, maxCents int64) {
		lines := []Line{{"A", q1, p1}, {"B", q2, p2}}
		err := CheckAmounts(lines, total, maxCents)
		if want := bigCheck(lines, total, maxCents); (err == nil) != want {
			t.Fatalf("CheckAmounts(%v, %d, %d) = %v, arbitrary precision says ok=%v", lines, total, maxCents, err, want)
		}
	})
}

// FuzzParseTxn: a body ParseTxn accepts means the same to any JSON reader
// (its fields are what a plain map decoding finds under the exact keys),
// and re-encoding what it parsed parses back to the same Txn.
func FuzzParseTxn(f *testing.F) {
	seeds := []string{
		`{"flow_no":"1000000000000001","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":700,"tender":"cash","lines":[{"barcode":"A1","qty":1,"price_cents":700}],"created_at":"2026-05-20T10:00:00Z","occurred_at":"2026-05-20T10:00:00Z"}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"refund","total_cents":5,"TOTAL_CENTS":7,"created_at":"x"}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":5,"total_cents":7,"created_at":"x"}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":5,"created_at":"x","lines":[{"qty":1,"qty":40}]}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":1e2,"created_at":"x"}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":9223372036854775808,"created_at":"x"}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","\u212aind":"sale","total_cents":5,"created_at":"x"}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":5,"created_at":"x","note":{"a":1,"A":2}}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":null,"created_at":"x"}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":0,"created_at":"x","lines":[{"barcode":"A","qty":1,"price_cents":null}]}`,
		`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":0,"created_at":"x","lines":[{"barcode":"A","qty":1}]}`,
		`[]`, `null`, `{}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tx, err := ParseTxn(body)
		if err != nil {
			return
		}
		var generic map[string]json.RawMessage
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		if err := d.Decode(&generic); err != nil {
			t.Fatalf("accepted a body a plain reader cannot decode: %v", err)
		}
		str := func(k string) string {
			var s string
			_ = json.Unmarshal(generic[k], &s)
			return s
		}
		if str("flow_no") != tx.FlowNo || str("store_id") != tx.StoreID || str("terminal_id") != tx.TerminalID || str("kind") != tx.Kind {
			t.Fatalf("ParseTxn read %+v, a plain reader reads %s", tx, body)
		}
		if n, err := strconv.ParseInt(string(generic["total_cents"]), 10, 64); err != nil || n != tx.TotalCents {
			t.Fatalf("ParseTxn read total %d, a plain reader reads %s", tx.TotalCents, generic["total_cents"])
		}
		var lines []map[string]json.RawMessage
		_ = json.Unmarshal(generic["lines"], &lines)
		if len(lines) != len(tx.Lines) {
			t.Fatalf("ParseTxn read %d lines, a plain reader %d", len(tx.Lines), len(lines))
		}
		for i, l := range lines {
			var barcode string
			_ = json.Unmarshal(l["barcode"], &barcode)
			qty, err1 := strconv.ParseInt(string(l["qty"]), 10, 64)
			price, err2 := strconv.ParseInt(string(l["price_cents"]), 10, 64)
			if err1 != nil || err2 != nil || qty != tx.Lines[i].Qty || price != tx.Lines[i].PriceCents || barcode != tx.Lines[i].Barcode {
				t.Fatalf("line %d: ParseTxn read %+v, a plain reader %s", i, tx.Lines[i], body)
			}
		}
		out, err := json.Marshal(tx)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseTxn(out)
		if err != nil {
			t.Fatalf("re-encoded %s does not parse: %v", out, err)
		}
		if !reflect.DeepEqual(normal(back), normal(tx)) {
			t.Fatalf("round trip:\n%+v\n%+v", tx, back)
		}
	})
}

// normal treats no lines and an empty list of lines alike.
func normal(t Txn) Txn {
	if len(t.Lines) == 0 {
		t.Lines = nil
	}
	return t
}
