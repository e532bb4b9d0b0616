package hq_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

// TestPostgresConcurrentBatchesNeverDeadlock: posedge-hq processes
// sharing one database store batches with stores in common, each adding
// stores and days not stored yet. Each batch takes its stores' advisory
// locks in one order first (sync/hqdb/postgres storelocks.go); without
// them such batches deadlocked (the chain benchmark: 9 and 40 with two
// and four processes, each found after deadlock_timeout, then retried).
// A retry is logged, so the count is exact; the rows and day totals
// are then checked against what was sent.
func TestPostgresConcurrentBatchesNeverDeadlock(t *testing.T) {
	const rounds, writers, batches, perBatch, stores, days = 2, 6, 80, 200, 150, 3
	pg := testenv.StartPostgres(t)
	dsn := pg.NewDatabase(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var db string
	if err := admin.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	// A deadlock is found after deadlock_timeout (1 s by default): short,
	// so that a regression fails in seconds, not minutes.
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %q SET deadlock_timeout = '20ms'", db)); err != nil {
		t.Fatal(err)
	}
	var retries atomic.Int64
	var wantCents atomic.Int64
	// Each round's stores and days are new; a deadlock needs a batch's
	// day rows committed by another between its snapshot and its upsert,
	// so without the locks one round deadlocked in about half the runs
	// here, two rounds in 4 of 4 (with them, none in any).
	for round := range rounds {
		var wg sync.WaitGroup
		for w := range writers {
			s := openStore(t, dsn, hqdb.StoreOptions{Logger: slog.New(retryCounter{&retries})})
			rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			wg.Go(func() {
				for j := range batches {
					msgs := make([]hqdb.Msg, 0, perBatch)
					for i := range perBatch {
						// Stores in a different order in every batch, a
						// window of them that moves on (new stores rows), on
						// days that move on (new day_totals rows).
						st := 10000*round + 5*j + rng.IntN(stores)
						cents := int64(100 + i)
						wantCents.Add(cents)
						msgs = append(msgs, sale{store: fmt.Sprintf("S%05d", st), flow: fmt.Sprintf("%d%d%03d%03d", round+1, w+1, j, i),
							terminal: fmt.Sprintf("T%02d", 1+i%3), cents: cents,
							created: t0.AddDate(0, 0, 100*round+j/4+rng.IntN(days))}.msg(t, t0))
					}
					out, err := s.InsertBatch(ctx, msgs)
					if err != nil {
						t.Errorf("round %d writer %d batch %d: %v", round, w, j, err)
						return
					}
					for i, o := range out {
						if o != hqdb.Inserted {
							t.Errorf("round %d writer %d batch %d message %d: %v, want inserted", round, w, j, i, o)
						}
					}
				}
			})
		}
		wg.Wait()
	}
	if n := retries.Load(); n != 0 {
		t.Errorf("%d batches were retried after a deadlock, want none", n)
	}
	var rows, cents, dayCents int64
	if err := admin.QueryRow(ctx, "SELECT count(*), sum(total_cents) FROM transactions").Scan(&rows, &cents); err != nil {
		t.Fatal(err)
	}
	if err := admin.QueryRow(ctx, "SELECT sum(sales_cents) FROM day_totals").Scan(&dayCents); err != nil {
		t.Fatal(err)
	}
	if rows != rounds*writers*batches*perBatch || cents != wantCents.Load() || dayCents != cents {
		t.Fatalf("stored %d rows of %d cents, day totals %d cents; sent %d rows of %d cents",
			rows, cents, dayCents, rounds*writers*batches*perBatch, wantCents.Load())
	}
}

// retryCounter counts the Store's "batch retried" records.
type retryCounter struct{ n *atomic.Int64 }

func (r retryCounter) Enabled(context.Context, slog.Level) bool { return true }
func (r retryCounter) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message == "batch retried" {
		r.n.Add(1)
	}
	return nil
}
func (r retryCounter) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r retryCounter) WithGroup(string) slog.Handler      { return r }
