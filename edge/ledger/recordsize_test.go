package ledger_test

import (
	"fmt"
	"testing"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/offline/journal"
)

// TestRecordMemoryUsage prints MEMORY USAGE of a sale's idempotency
// record in the new layout and, for the same result, in the old one
// (field body) — the figures of docs/performance.md:
//
//	go test -count=1 -run '^TestRecordMemoryUsage$' -v ./edge/ledger/
func TestRecordMemoryUsage(t *testing.T) {
	e := newEnv(t, journal.Options{})
	k := redisdb.NewKeys("S1")
	for _, n := range []int{1, 200} {
		var s ledger.SaleRequest
		s.Tender = "cash"
		for i := range n {
			b := fmt.Sprintf("400638133%04d", i)
			e.putItem(b, 199, 1000)
			s.Lines = append(s.Lines, ledger.Line{Barcode: b, Qty: 1, PriceCents: 199})
			s.TotalCents += 199
		}
		key := fmt.Sprintf("size-%d", n)
		r, err := e.l.Sale(e.ctx, "T1", key, s)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := e.rdb.HGetAll(e.ctx, k.Idem("T1", key)).Result()
		if err != nil {
			t.Fatal(err)
		}
		old := []any{"body", string(r.Body)}
		for f, v := range rec {
			if f != "rz" {
				old = append(old, f, v)
			}
		}
		if err := e.rdb.HSet(e.ctx, k.Idem("T1", key+"-old"), old...).Err(); err != nil {
			t.Fatal(err)
		}
		// SAMPLES 0: every field. By default Redis samples 5 fields of a
		// hash in its hashtable encoding and extrapolates, and the old
		// layout's record, one 11 KB field among eight, then came out at
		// the new one's size whenever the sample missed it (a CI run).
		now, _ := e.rdb.MemoryUsage(e.ctx, k.Idem("T1", key), 0).Result()
		was, _ := e.rdb.MemoryUsage(e.ctx, k.Idem("T1", key+"-old"), 0).Result()
		t.Logf("%d-line sale: result %d bytes; record MEMORY USAGE old layout %d, new %d", n, len(r.Body), was, now)
		if n == 200 && now*3 > was {
			t.Errorf("200-line record %d bytes, old layout %d: not compact", now, was)
		}
	}
}
