package hq_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

func adjustmentMsg(t testing.TB, a wire.StockAdjustment, received time.Time) hqdb.Msg {
	t.Helper()
	b, _ := json.Marshal(a)
	m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, wire.StockSubject(wire.DefaultSubjectPrefix, a.StoreID), "", b, received)
	if err != nil {
		t.Fatalf("decode stock adjustment: %v", err)
	}
	return m
}

// A stock adjustment is stored once per (store_id, adjustment_id): the
// same one resent (after a lost ack, a daemon killed) is a duplicate.
func testStockAdjustmentOnce(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{})
	a1 := wire.StockAdjustment{StoreID: "S1", AdjustmentID: "a1", Barcode: "A", Delta: 24, Reason: "receiving", Stock: 30,
		CreatedAt: t0.Format(time.RFC3339Nano)}
	a2 := a1
	a2.AdjustmentID, a2.Delta, a2.Reason, a2.Stock, a2.CreatedAt = "a2", -2, "damage", 28, t0.Add(time.Minute).Format(time.RFC3339Nano)
	other := a1
	other.StoreID = "S2"
	wantOutcomes(t, insert(t, s, adjustmentMsg(t, a1, t0), adjustmentMsg(t, a1, t0), adjustmentMsg(t, other, t0)),
		hqdb.Inserted, hqdb.Duplicate, hqdb.Inserted)
	wantOutcomes(t, insert(t, s, adjustmentMsg(t, a2, t0), adjustmentMsg(t, a1, t0.Add(time.Hour))), hqdb.Inserted, hqdb.Duplicate)
	got, err := s.StockAdjustments(context.Background(), "S1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].AdjustmentID != "a1" || got[0].Delta != 24 || got[0].Reason != "receiving" || got[0].Barcode != "A" ||
		!got[0].CreatedAt.Equal(t0) || got[1].AdjustmentID != "a2" || got[1].Delta != -2 {
		t.Fatalf("stored %+v, want a1 (+24 receiving) then a2 (-2)", got)
	}
	var body wire.StockAdjustment
	if err := json.Unmarshal(got[0].Body, &body); err != nil || body != a1 {
		t.Errorf("stored body %s, want the message's", got[0].Body)
	}
}

func TestDecodeStockAdjustment(t *testing.T) {
	ok := wire.StockAdjustment{StoreID: "S1", AdjustmentID: "0a1b", Barcode: "A-1", Delta: -3, Reason: "count",
		CreatedAt: t0.Format(time.RFC3339Nano)}
	tests := []struct {
		name string
		edit func(*wire.StockAdjustment)
		err  string
	}{
		{"valid", func(*wire.StockAdjustment) {}, ""},
		{"other store in the body", func(a *wire.StockAdjustment) { a.StoreID = "S2" }, "store_id"},
		{"zero delta", func(a *wire.StockAdjustment) { a.Delta = 0 }, "delta"},
		{"unknown reason", func(a *wire.StockAdjustment) { a.Reason = "theft" }, "reason"},
		{"bad barcode", func(a *wire.StockAdjustment) { a.Barcode = "a b" }, "barcode"},
		{"no id", func(a *wire.StockAdjustment) { a.AdjustmentID = "" }, "adjustment_id"},
		{"bad time", func(a *wire.StockAdjustment) { a.CreatedAt = "yesterday" }, "created_at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := ok
			tc.edit(&a)
			b, _ := json.Marshal(a)
			m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, wire.StockSubject(wire.DefaultSubjectPrefix, "S1"), "", b, t0)
			switch {
			case tc.err == "" && (err != nil || m.Kind != hqdb.KindStockAdjustment):
				t.Fatalf("decode: %v %v", m.Kind, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want one naming %s", err, tc.err)
			}
		})
	}
}
