package hq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// txnBody is a transaction body with the given lines (qty, price_cents)
// and total, as the edge writes it.
func txnBody(flow string, total int64, lines ...[2]int64) []byte {
	ls := []map[string]any{}
	for _, l := range lines {
		ls = append(ls, map[string]any{"barcode": "4006381333931", "qty": l[0], "price_cents": l[1]})
	}
	b, _ := json.Marshal(map[string]any{
		"flow_no": flow, "store_id": "S001", "terminal_id": "T01", "kind": "sale", "total_cents": total,
		"tender": "cash", "lines": ls, "created_at": t0.Format(time.RFC3339), "occurred_at": t0.Format(time.RFC3339),
	})
	return b
}

// The batch that wrapped 64 bits: 18 lines of 10^6 × 10^12, one
// of 10^6 × 446744073709 and two small ones sum to 2^64 + 5,000,100.
func wrappingLines() [][2]int64 {
	var ls [][2]int64
	for range 18 {
		ls = append(ls, [2]int64{1000000, 1000000000000})
	}
	return append(ls, [2]int64{1000000, 446744073709}, [2]int64{1, 551716}, [2]int64{1, 5000000})
}

func TestScreenQuarantinesMoneyHQMustNotCount(t *testing.T) {
	const max = wire.DefaultMaxSaleCents
	cases := []struct {
		name string
		body []byte
		want string // the quarantine reason; "" = stored
	}{
		{"a sale within the bound", txnBody("1", 700, [2]int64{2, 200}, [2]int64{1, 300}), ""},
		{"a total of exactly max_sale_cents", txnBody("1", max, [2]int64{1, max}), ""},
		{"no lines, nothing to pay", txnBody("1", 0), ""},
		{"lines that wrap 64 bits to the total", txnBody("1", 5000100, wrappingLines()...), hqdb.QuarantineAmount},
		{"a product above int64", txnBody("1", 0, [2]int64{math.MaxInt64, 2}), hqdb.QuarantineAmount},
		{"a price above the bound", txnBody("1", max+1, [2]int64{1, max + 1}), hqdb.QuarantineAmount},
		{"a line above the bound", txnBody("1", 2*(max/2+1), [2]int64{2, max/2 + 1}), hqdb.QuarantineAmount},
		{"a total above the bound", txnBody("1", max+1, [2]int64{1, max}, [2]int64{1, 1}), hqdb.QuarantineAmount},
		{"lines not summing to the total", txnBody("1", 701, [2]int64{1, 700}), hqdb.QuarantineAmount},
		{"a total without lines", txnBody("1", 700), hqdb.QuarantineAmount},
		{"a zero quantity", txnBody("1", 0, [2]int64{0, 700}), hqdb.QuarantineAmount},
		{"a negative quantity", txnBody("1", 0, [2]int64{-1, 700}, [2]int64{1, 700}), hqdb.QuarantineAmount},
		{"a negative price", txnBody("1", 0, [2]int64{1, -700}, [2]int64{1, 700}), hqdb.QuarantineAmount},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, "pos.txn.S001", wire.SchemaV1, tc.body, t0)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			hq.Screen(&m, max)
			if m.Quarantine != tc.want {
				t.Fatalf("quarantine %q (%s), want %q", m.Quarantine, m.QuarantineDetail, tc.want)
			}
		})
	}
}

// Keys that differ only in case, or twice, mean different things to
// different JSON readers: such a body is refused before it is stored.
func TestDecodeMsgRefusesAmbiguousKeys(t *testing.T) {
	good := string(txnBody("1", 700, [2]int64{1, 700}))
	cases := []struct{ name, body string }{
		{"total_cents twice", strings.Replace(good, `"total_cents":700`, `"total_cents":700,"total_cents":1`, 1)},
		{"TOTAL_CENTS", strings.Replace(good, `"total_cents"`, `"TOTAL_CENTS"`, 1)},
		{"total_cents beside Total_Cents", strings.Replace(good, `"total_cents":700`, `"total_cents":700,"Total_Cents":1`, 1)},
		{"a Kelvin sign for k", strings.Replace(good, `"kind"`, "\"\u212aind\"", 1)},
		{"qty twice in a line", strings.Replace(good, `"qty":1`, `"qty":1,"qty":40`, 1)},
		{"QTY in a line", strings.Replace(good, `"qty"`, `"QTY"`, 1)},
		{"data after the object", good + `{}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.body == good {
				t.Fatal("the case did not change the body")
			}
			_, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, "pos.txn.S001", wire.SchemaV1, []byte(tc.body), t0)
			var re *hq.RejectError
			if !errors.As(err, &re) || !errors.Is(err, wire.ErrInvalid) {
				t.Fatalf("decode %s: %v, want a RejectError wrapping wire.ErrInvalid", tc.body, err)
			}
		})
	}
	if _, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, "pos.txn.S001", wire.SchemaV1, []byte(good), t0); err != nil {
		t.Fatalf("the unchanged body: %v", err)
	}
}

// testQuarantine (Store contract): a transaction marked by Screen, or one
// that would carry a day's totals past int64, goes to the quarantine
// table; the day totals stay exact integers up to the last cent.
func testQuarantine(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{})
	ctx := context.Background()
	const big = math.MaxInt64 - 807
	a := sale{store: "S001", flow: "1", terminal: "T01", cents: big}
	b := sale{store: "S001", flow: "2", terminal: "T01", cents: 807}
	c := sale{store: "S001", flow: "3", terminal: "T01", cents: 1}
	d := sale{store: "S001", flow: "4", terminal: "T02", cents: 1}
	wantOutcomes(t, insert(t, s, a.msg(t, t0)), hqdb.Inserted)
	wantOutcomes(t, insert(t, s, b.msg(t, t0), c.msg(t, t0), d.msg(t, t0), c.msg(t, t0)),
		hqdb.Inserted, hqdb.Quarantined, hqdb.Inserted, hqdb.Duplicate)
	// Within one batch too: the batch's own sum is checked.
	e := sale{store: "S001", flow: "5", terminal: "T03", cents: big}
	f := sale{store: "S001", flow: "6", terminal: "T03", cents: 808}
	wantOutcomes(t, insert(t, s, e.msg(t, t0), f.msg(t, t0)), hqdb.Inserted, hqdb.Quarantined)
	// Refunds have totals of their own.
	r := sale{store: "S001", flow: "7", terminal: "T01", cents: math.MaxInt64, kind: "refund"}
	wantOutcomes(t, insert(t, s, r.msg(t, t0)), hqdb.Inserted)

	// Marked by Screen: never stored, whatever the day holds.
	g := sale{store: "S001", flow: "8", terminal: "T04", cents: 1000}.msg(t, t0)
	hq.Screen(&g, 999)
	wantOutcomes(t, insert(t, s, g), hqdb.Quarantined)

	qs, err := s.Quarantined(ctx, "S001")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, q := range qs {
		got = append(got, q.FlowNo+" "+q.Reason)
		if q.FlowNo == "3" && string(q.Body) != string(c.body()) {
			t.Errorf("quarantined body %s, want the body as received %s", q.Body, c.body())
		}
		if q.Detail == "" || !q.ReceivedAt.Equal(t0) {
			t.Errorf("quarantine row %+v lacks its detail or time", q)
		}
	}
	if want := []string{"3 day_total_overflow", "6 day_total_overflow", "8 amount"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("quarantined %v, want %v", got, want)
	}
	for _, flow := range []string{"3", "6", "8"} {
		if _, err := s.Transaction(ctx, "S001", flow); !errors.Is(err, hqdb.ErrNotFound) {
			t.Errorf("quarantined flow %s is stored: %v", flow, err)
		}
	}
	if w := watermark(t, s, "S001"); w.Count != 5 {
		t.Fatalf("stored %d transactions, want 5 (1, 2, 4, 5, 7)", w.Count)
	}
	// The day totals read back as exact integers: the manifests that
	// match them leave no day incomplete.
	insert(t, s,
		manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: "20260520", Sales: 2, SalesCents: math.MaxInt64, Refunds: 1, RefundCents: math.MaxInt64}, t0),
		manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T02", Date: "20260520", Sales: 1, SalesCents: 1}, t0),
		manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T03", Date: "20260520", Sales: 1, SalesCents: big}, t0),
	)
	rep, err := s.Completeness(ctx, t0)
	if err != nil {
		t.Fatalf("completeness: %v", err)
	}
	if len(rep.Incomplete) != 0 {
		t.Fatalf("incomplete = %+v, want none", rep.Incomplete)
	}
}

// TestReceiverQuarantinesAndGoesOn: a message above max_sale_cents is
// kept in the quarantine table, counted, acknowledged, and does not hold
// back the sale behind it; the admin API lists it.
func TestReceiverQuarantinesAndGoesOn(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			n := testenv.StartNATS(t)
			cfg := testConfig(n.URL(), be.dsn(t))
			cfg.MaxSaleCents = 10_000
			h := startReceiver(t, cfg, "hq")
			_, js := connect(t, n.URL())

			publish(t, js, txnMsg("S001", "S001.1", sale{store: "S001", flow: "1", cents: 10_001}.body()))
			publish(t, js, txnMsg("S001", "S001.2", txnBody("2", 5000100, wrappingLines()...)))
			publish(t, js, txnMsg("S001", "S001.3", sale{store: "S001", flow: "3", cents: 10_000}.body()))
			testenv.WaitFor(t, waitLong, "the good sale stored", func() bool { return count(t, h.store, "S001") == 1 })
			consumerSettled(t, js)
			if c := h.metrics.Counts(); c.Quarantined != 2 || c.Ingested != 1 || c.Rejected != 0 {
				t.Fatalf("counts = %+v, want 2 quarantined, 1 ingested", c)
			}
			srv := httptest.NewServer(hq.NewAdminHandler(h.store, h.recv, h.metrics, testLogger(t)))
			defer srv.Close()
			resp, err := hqClient(t).Get(srv.URL + "/v1/stores/S001/quarantine")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				Quarantined []hqdb.StoredQuarantine `json:"quarantined"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET quarantine: %d %v", resp.StatusCode, err)
			}
			flows := []string{}
			for _, q := range got.Quarantined {
				flows = append(flows, fmt.Sprintf("%s:%s", q.FlowNo, q.Reason))
			}
			if strings.Join(flows, ",") != "1:amount,2:amount" {
				t.Fatalf("quarantine listed %v", flows)
			}
		})
	}
}
