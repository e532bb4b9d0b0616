package hq_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// FuzzDecodeStockAdjustment: of any body on a store's stock subject, HQ
// keeps only an adjustment of that store with a usable id, barcode,
// reason, time and a non-zero delta, and what it keeps is what a plain
// JSON reader finds in the body (no duplicate key or key case can make
// HQ and a reporting tool read two different deltas).
func FuzzDecodeStockAdjustment(f *testing.F) {
	f.Add([]byte(`{"store_id":"S001","adjustment_id":"0a1b","barcode":"A-1","delta":-3,"reason":"count","stock":7,"created_at":"2026-05-20T10:00:00Z"}`))
	f.Add([]byte(`{"store_id":"S001","adjustment_id":"0a1b","barcode":"A-1","delta":-3,"delta":30,"reason":"count","stock":7,"created_at":"2026-05-20T10:00:00Z"}`))
	f.Add([]byte(`{"store_id":"S001","adjustment_id":"0a1b","barcode":"A-1","Delta":5,"reason":"receiving","stock":7,"created_at":"2026-05-20T10:00:00Z"}`))
	f.Add([]byte(`{"store_id":"S002","adjustment_id":"0a1b","barcode":"A-1","delta":1,"reason":"damage","stock":0,"created_at":"2026-05-20T10:00:00Z"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		subject := wire.StockSubject(wire.DefaultSubjectPrefix, "S001")
		m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, subject, "", body, time.Unix(0, 0))
		if err != nil {
			return
		}
		if m.Kind != hqdb.KindStockAdjustment || m.StoreID != "S001" {
			t.Fatalf("a body on %s decoded as kind %v of store %q", subject, m.Kind, m.StoreID)
		}
		a := m.Adjustment
		if a.StoreID != "S001" || a.Delta == 0 || !wire.ValidAdjustmentReason(a.Reason) || a.AdjustmentID == "" || a.Barcode == "" {
			t.Fatalf("accepted an unusable adjustment %+v from %q", a, body)
		}
		if _, err := time.Parse(time.RFC3339Nano, a.CreatedAt); err != nil {
			t.Fatalf("accepted created_at %q", a.CreatedAt)
		}
		var plain wire.StockAdjustment
		if err := json.Unmarshal(body, &plain); err != nil {
			t.Fatalf("accepted %q, which a plain reader refuses: %v", body, err)
		}
		if plain != a {
			t.Fatalf("HQ reads %+v, a plain reader %+v, from %q", a, plain, body)
		}
	})
}
