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
	s := bigSale(e, 200)
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
	replayFromRecord(t, e, "T1", "big-1", s, r)
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

func bigSale(e *env, n int) ledger.SaleRequest {
	s := ledger.SaleRequest{Tender: "cash"}
	for i := range n {
		b := "B" + strings.Repeat("0", 3-len(itoa(i))) + itoa(i)
		e.putItem(b, 199, 1000)
		s.Lines = append(s.Lines, ledger.Line{Barcode: b, Qty: 1, PriceCents: 199})
		s.TotalCents += 199
	}
	return s
}

// replayFromRecord copies the record of (term, key) under a key the
// journal lacks (as on a daemon that did not journal it) and another flow
// number (the journal has this one), and checks a retry there replays r's
// result from the record alone.
func replayFromRecord(t *testing.T, e *env, term, key string, s ledger.SaleRequest, r *ledger.Result) {
	t.Helper()
	k := redisdb.NewKeys("S1")
	rec, err := e.rdb.HGetAll(e.ctx, k.Idem(term, key)).Result()
	if err != nil || len(rec["rz"]) == 0 {
		t.Fatalf("record of %s: %v %v", key, rec, err)
	}
	rec["flow_no"] = "1000000000000099"
	want := strings.Replace(string(r.Body), r.FlowNo, rec["flow_no"], 1)
	fields := []any{}
	for f, v := range rec {
		fields = append(fields, f, v)
	}
	if err := e.rdb.HSet(e.ctx, k.Idem(term, key+"-copy"), fields...).Err(); err != nil {
		t.Fatal(err)
	}
	again, err := e.l.Sale(e.ctx, term, key+"-copy", s)
	if err != nil || !again.Replayed || string(again.Body) != want {
		t.Fatalf("replay from the record of %s: %v, %v; want the %d-byte result", key, again, err, len(r.Body))
	}
}

// TestRepairReapplyWritesCompactRecord: after Redis lost its data, the
// start-up repair re-applies a 200-line sale from the journal, and the
// record it writes is compact and replays the journaled result.
func TestRepairReapplyWritesCompactRecord(t *testing.T) {
	e := newEnv(t, journal.Options{})
	s := bigSale(e, 200)
	r := e.mustSale("T1", "big-r", s)
	e.waitCompleted("T1:big-r")
	if err := e.rdb.FlushAll(e.ctx).Err(); err != nil {
		t.Fatal(err)
	}
	bigSale(e, 200)
	e.restart(journal.Options{})
	if _, err := e.l.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	rec := e.rdb.HGetAll(e.ctx, redisdb.NewKeys("S1").Idem("T1", "big-r")).Val()
	if rec["flow_no"] != r.FlowNo || rec["state"] != "COMPLETED" || rec["fp"] != ledger.Fingerprint(s) || len(rec["rz"]) >= len(r.Body)/4 {
		t.Fatalf("re-applied record flow %s state %s, %d bytes of rz for a %d-byte result", rec["flow_no"], rec["state"], len(rec["rz"]), len(r.Body))
	}
	replayFromRecord(t, e, "T1", "big-r", s, r)
}
