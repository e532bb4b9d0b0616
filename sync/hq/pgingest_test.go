package hq_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// TestPostgresOneRoundTrip: plain batches (new sales, byte-identical
// redeliveries, manifests, heartbeats) take the one-round-trip ingest;
// a conflict or a quarantined sale makes the batch take the careful
// path, with the same outcomes as SQLite's (TestStore checks those).
// New sales go in without ON CONFLICT; the first batch holding a key
// stored already is sent again with it (storedKey), and so are the
// batches right after it.
func TestPostgresOneRoundTrip(t *testing.T) {
	pg := testenv.StartPostgres(t)
	s := openStore(t, pg.NewDatabase(t), hqdb.StoreOptions{})
	a := sale{store: "S001", flow: "1", cents: 700}
	b := sale{store: "S001", flow: "2", cents: 300, kind: "refund"}
	c := sale{store: "S002", flow: "1", cents: 500, terminal: "T02"}
	mf := manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: "20260520", Sales: 1, SalesCents: 700}, t0)
	hb := heartbeatMsg(t, wire.Heartbeat{StoreID: "S003", SentAt: t0.Format(time.RFC3339)}, t0)
	screened := sale{store: "S009", flow: "4", cents: 1000}.msg(t, t0)
	hq.Screen(&screened, 999)
	steps := []struct {
		name    string
		msgs    []hqdb.Msg
		want    []hqdb.Outcome
		careful int64 // careful batches so far
		stored  int64 // batches sent again with ON CONFLICT so far
	}{
		{"new sales, a refund, a manifest, a heartbeat",
			[]hqdb.Msg{a.msg(t, t0), b.msg(t, t0), c.msg(t, t0), mf, hb},
			[]hqdb.Outcome{hqdb.Inserted, hqdb.Inserted, hqdb.Inserted, hqdb.Inserted, hqdb.Inserted}, 0, 0},
		{"redelivered, and repeated inside the batch",
			[]hqdb.Msg{a.msg(t, t0.Add(time.Minute)), a.msg(t, t0.Add(time.Minute)), c.msg(t, t0)},
			[]hqdb.Outcome{hqdb.Duplicate, hqdb.Duplicate, hqdb.Duplicate}, 0, 1},
		{"a conflict",
			[]hqdb.Msg{sale{store: "S001", flow: "1", cents: 701}.msg(t, t0), sale{store: "S001", flow: "3", cents: 1}.msg(t, t0)},
			[]hqdb.Outcome{hqdb.Conflict, hqdb.Inserted}, 1, 1},
		{"a day total near 2^63-1",
			[]hqdb.Msg{sale{store: "S009", flow: "1", terminal: "T09", cents: math.MaxInt64 - 1}.msg(t, t0)},
			[]hqdb.Outcome{hqdb.Inserted}, 1, 1},
		{"a sale that would carry it past (found by the statement)",
			[]hqdb.Msg{sale{store: "S009", flow: "2", terminal: "T09", cents: 2}.msg(t, t0), sale{store: "S009", flow: "3", terminal: "T08", cents: 2}.msg(t, t0)},
			[]hqdb.Outcome{hqdb.Quarantined, hqdb.Inserted}, 2, 1},
		{"a sale Screen quarantined",
			[]hqdb.Msg{screened},
			[]hqdb.Outcome{hqdb.Quarantined}, 3, 1},
	}
	for _, st := range steps {
		wantOutcomes(t, insert(t, s, st.msgs...), st.want...)
		if got := hq.CarefulBatches(s); got != st.careful {
			t.Fatalf("%s: %d careful batches so far, want %d", st.name, got, st.careful)
		}
		if got := hq.StoredKeyBatches(s); got != st.stored {
			t.Fatalf("%s: %d batches sent again with ON CONFLICT so far, want %d", st.name, got, st.stored)
		}
	}
	w := watermark(t, s, "S001")
	if w.Count != 3 || w.MaxFlowNo != "3" || !w.LastSeenAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("watermark of S001 = %+v, want 3 rows up to flow 3, last seen %v", w, t0.Add(time.Minute))
	}
	if w := watermark(t, s, "S003"); w.Count != 0 || !w.LastSeenAt.Equal(t0) {
		t.Fatalf("watermark of S003 (heartbeat only) = %+v", w)
	}
	rep, err := s.Completeness(context.Background(), t0)
	if err != nil {
		t.Fatal(err)
	}
	// The manifest says 1 sale of 700 cents; stored are the sales 1 and
	// 3 (701 was a conflict, not counted) and the refund.
	if len(rep.Incomplete) != 1 || rep.Incomplete[0].Stored != (hqdb.Totals{Sales: 2, SalesCents: 701, Refunds: 1, RefundCents: 300}) {
		t.Fatalf("completeness = %+v", rep.Incomplete)
	}
}
