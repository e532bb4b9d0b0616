package wire

import (
	"encoding/json"
	"testing"
)

var benchTxnBody = []byte(`{"flow_no":"1000000000000045","store_id":"S042","terminal_id":"T01","kind":"sale","total_cents":4500,` +
	`"tender":"cash","created_at":"2026-12-01T10:00:00.123456789Z","occurred_at":"2026-12-01T10:00:00Z",` +
	`"lines":[{"barcode":"6901234567890","qty":2,"price_cents":1500},{"barcode":"6901234567891","qty":1,"price_cents":1500}]}`)

// ParseTxn (strict keys, then decoding) against json.Unmarshal alone on
// a body as posedge writes it: HQ runs ParseTxn on every message.
func BenchmarkParseTxn(b *testing.B) {
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseTxn(benchTxnBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The floor: encoding/json alone, with none of the strict checks.
	b.Run("bare_unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var t Txn
			if err := json.Unmarshal(benchTxnBody, &t); err != nil {
				b.Fatal(err)
			}
		}
	})
}
