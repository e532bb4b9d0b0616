package hq_test

import (
	"bytes"
	"encoding/json"
	"math/big"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/cents"

	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/wire"
)

// FuzzDecodeTxn: of any transaction body, HQ stores and counts only one
// whose prices, lines and total are within max_sale_cents and whose lines
// sum to the total, in arbitrary precision (an oracle apart from
// wire.CheckAmounts); it quarantines exactly the others. What it stores
// is the body as received, and what it indexes (store, flow, terminal,
// kind, total) is what any JSON reader finds in that body.
func FuzzDecodeTxn(f *testing.F) {
	f.Add(txnBody("1", 700, [2]int64{2, 200}, [2]int64{1, 300}), cents.DefaultMaxSaleCents)
	f.Add(txnBody("1", 5000100, wrappingLines()...), int64(9223372036854775807))
	f.Add(txnBody("1", cents.DefaultMaxSaleCents+1, [2]int64{1, cents.DefaultMaxSaleCents + 1}), cents.DefaultMaxSaleCents)
	f.Add(txnBody("1", 701, [2]int64{1, 700}), cents.DefaultMaxSaleCents)
	f.Add([]byte(`{"flow_no":"1","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":5,"TOTAL_CENTS":7,"created_at":"2026-05-20T10:00:00Z","lines":[{"barcode":"A","qty":1,"price_cents":5}]}`), cents.DefaultMaxSaleCents)
	f.Add([]byte(`{"flow_no":"1","store_id":"S001","terminal_id":"T01","kind":"refund","total_cents":40,"created_at":"2026-05-20T10:00:00Z","lines":[{"barcode":"A","qty":1,"qty":40,"price_cents":1}]}`), cents.DefaultMaxSaleCents)
	f.Fuzz(func(t *testing.T, body []byte, maxCents int64) {
		if maxCents < 1 || maxCents > cents.MaxSaleCentsCeiling {
			maxCents = cents.DefaultMaxSaleCents // the configured bound is always within these
		}
		m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, "pos.txn.S001", wire.SchemaV1, body, time.Unix(0, 0))
		if err != nil {
			return
		}
		hq.Screen(&m, maxCents)
		if !bytes.Equal(m.Body, body) {
			t.Fatal("the body to store is not the body received")
		}
		var g struct {
			FlowNo     string `json:"flow_no"`
			StoreID    string `json:"store_id"`
			TerminalID string `json:"terminal_id"`
			Kind       string `json:"kind"`
			Total      json.Number
			Lines      []map[string]json.RawMessage
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil {
			t.Fatalf("accepted a body a plain reader cannot decode: %v", err)
		}
		for k, dst := range map[string]any{"flow_no": &g.FlowNo, "store_id": &g.StoreID, "terminal_id": &g.TerminalID, "kind": &g.Kind} {
			_ = json.Unmarshal(raw[k], dst)
		}
		g.Total = json.Number(raw["total_cents"])
		_ = json.Unmarshal(raw["lines"], &g.Lines)
		if g.FlowNo != m.Txn.FlowNo || g.StoreID != m.StoreID || g.TerminalID != m.Txn.TerminalID || g.Kind != m.Txn.Kind ||
			g.Total.String() != strconv.FormatInt(m.Txn.TotalCents, 10) || len(g.Lines) != len(m.Txn.Lines) {
			t.Fatalf("HQ indexes %+v, a plain reader reads %s", m.Txn, body)
		}
		ok := oracle(g.Total, g.Lines, maxCents)
		if ok != (m.Quarantine == "") {
			t.Fatalf("quarantine %q (%s), but arbitrary precision says the money is ok=%v: %s", m.Quarantine, m.QuarantineDetail, ok, body)
		}
		if m.Quarantine == "" {
			// Stored: it re-encodes to the same transaction.
			out, _ := json.Marshal(m.Txn)
			back, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, "pos.txn.S001", wire.SchemaV1, out, time.Unix(0, 0))
			if err != nil {
				t.Fatalf("re-encoded %s: %v", out, err)
			}
			hq.Screen(&back, maxCents)
			if back.Quarantine != "" || !reflect.DeepEqual(back.Txn, m.Txn) {
				t.Fatalf("re-encoded transaction differs: %+v vs %+v", back.Txn, m.Txn)
			}
		}
	})
}

// oracle checks the money in arbitrary precision from the numbers as a
// plain JSON reader sees them.
func oracle(total json.Number, lines []map[string]json.RawMessage, maxCents int64) bool {
	bmax := big.NewInt(maxCents)
	tot, ok := new(big.Int).SetString(total.String(), 10)
	if !ok || tot.Sign() < 0 || tot.Cmp(bmax) > 0 {
		return false
	}
	sum := new(big.Int)
	for _, l := range lines {
		q, ok1 := new(big.Int).SetString(string(l["qty"]), 10)
		p, ok2 := new(big.Int).SetString(string(l["price_cents"]), 10)
		if !ok1 || !ok2 || q.Sign() <= 0 || p.Sign() < 0 || p.Cmp(bmax) > 0 {
			return false
		}
		line := new(big.Int).Mul(q, p)
		if line.Cmp(bmax) > 0 {
			return false
		}
		sum.Add(sum, line)
	}
	return sum.Cmp(tot) == 0
}
