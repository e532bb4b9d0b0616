package ledger_test

import (
	"strings"
	"testing"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/offline/journal"
)

// TestOldLayoutRecordHonoured: a record written before the upgrade (the
// whole result in field body) still answers a retry its journal lacks
// (another daemon, or a crash before the journal commit): the same sale
// replays the stored result verbatim, a different one is a mismatch.
// Fails on code that reads only the new field rz.
func TestOldLayoutRecordHonoured(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 100, 1000)
	s := sale1("A", 2, 100)
	stored := `{"flow_no":"1000000000000007","store_id":"S1","terminal_id":"T1","kind":"sale","total_cents":200,"tender":"cash","lines":[{"barcode":"A","qty":2,"price_cents":100}],"created_at":"2026-12-02T10:00:00Z","occurred_at":"2026-12-02T10:00:00Z"}`
	k := redisdb.NewKeys("S1")
	for _, key := range []string{"old-1", "old-2"} {
		if err := e.rdb.HSet(e.ctx, k.Idem("T1", key), "state", "COMPLETED", "fp", ledger.Fingerprint(s),
			"flow_no", "1000000000000007", "owner", "old-daemon", "at", "0", "body", stored).Err(); err != nil {
			t.Fatal(err)
		}
	}
	r, err := e.l.Sale(e.ctx, "T1", "old-1", s)
	if err != nil || !r.Replayed || string(r.Body) != stored {
		t.Fatalf("retry of an old-layout record: %+v, %v; want replay of %s", r, err, stored)
	}
	if _, err := e.l.Sale(e.ctx, "T1", "old-2", sale1("A", 3, 100)); refusal(t, err).Code != "idempotency_key_reused" {
		t.Fatalf("different body on an old-layout record: %v", err)
	}
}

// TestBigSaleRecordCompactReplayed: a 200-line sale's record holds its
// result compressed, a retry the journal lacks replays it byte for byte,
// and a different body under the key is a mismatch.
func TestBigSaleRecordCompactReplayed(t *testing.T) {
	e := newEnv(t, journal.Options{})
	var s ledger.SaleRequest
	s.Tender = "cash"
	for i := range 200 {
		b := "B" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i)
		e.putItem(b, 199, 1000)
		s.Lines = append(s.Lines, ledger.Line{Barcode: b, Qty: 1, PriceCents: 199})
		s.TotalCents += 199
	}
	r, err := e.l.Sale(e.ctx, "T1", "big-1", s)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.rdb.HGetAll(e.ctx, redisdb.NewKeys("S1").Idem("T1", "big-1")).Result()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rec["body"]; ok || len(rec["rz"]) == 0 || len(rec["rz"]) >= len(r.Body)/4 {
		t.Fatalf("record keeps %d bytes of rz, body present %v, for a %d-byte result", len(rec["rz"]), rec["body"] != "", len(r.Body))
	}
	if _, err := e.l.Sale(e.ctx, "T1", "big-1", sale1("B000", 1, 199)); refusal(t, err).Code != "idempotency_key_reused" {
		t.Fatalf("different body: %v", err)
	}
	// The same record under a key the journal lacks (as on a daemon that
	// did not journal it): only the compressed result can answer. Under
	// another flow number, since the journal has this one.
	rec["flow_no"] = "1000000000000099"
	want := strings.Replace(string(r.Body), r.FlowNo, rec["flow_no"], 1)
	fields := []any{}
	for f, v := range rec {
		fields = append(fields, f, v)
	}
	if err := e.rdb.HSet(e.ctx, redisdb.NewKeys("S1").Idem("T1", "big-2"), fields...).Err(); err != nil {
		t.Fatal(err)
	}
	again, err := e.l.Sale(e.ctx, "T1", "big-2", s)
	if err != nil || !again.Replayed || string(again.Body) != want {
		t.Fatalf("replay from the compact record: %v, %v; want the %d-byte result", again, err, len(r.Body))
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}
