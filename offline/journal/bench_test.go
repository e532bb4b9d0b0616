package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSaleJournalWork is the journal's part of one durable sale, one
// at a time: the look-up of its idempotency key (a miss), then its append
// (three lines) committed with synchronous=FULL. Read its allocs/op; its
// ns/op is mostly one fsync and says little on a shared machine.
func BenchmarkSaleJournalWork(b *testing.B) {
	ctx := context.Background()
	j, err := Open(ctx, filepath.Join(b.TempDir(), "journal.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	lines := []Line{{Barcode: "A", Qty: 1, PriceCents: 199}, {Barcode: "B", Qty: 2, PriceCents: 50}, {Barcode: "C", Qty: 1, PriceCents: 1}}
	body := []byte(`{"flow_no":"1000000000000001","store_id":"S1","terminal_id":"T01","kind":"sale","total_cents":300}`)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		key := fmt.Sprintf("k%d", i)
		if t, err := j.ByKey(ctx, "T01", key); err != nil || t != nil {
			b.Fatalf("ByKey: %v %v", t, err)
		}
		t := Txn{FlowNo: fmt.Sprintf("1%015d", i), Seq: int64(i + 1), TerminalID: "T01", IdemKey: key, Fingerprint: "fp",
			Kind: "sale", Tender: "cash", TotalCents: 300, BusinessDay: "20261201", BusinessHour: "10",
			CreatedAt: now, Lines: lines, Body: body, Applied: true}
		if err := j.Append(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeyLookupHit is the look-up a retried sale makes: its key found
// with its lines. No fsync: allocs/op and ns/op are the statements' cost.
func BenchmarkKeyLookupHit(b *testing.B) {
	ctx := context.Background()
	j, err := Open(ctx, filepath.Join(b.TempDir(), "journal.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	for i := 0; i < 100; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if t, err := j.ByKey(ctx, "T01", "k42"); err != nil || t == nil || len(t.Lines) != 1 {
			b.Fatalf("ByKey: %v %v", t, err)
		}
	}
}

// BenchmarkOutboxBatchRead is the replay's read of one batch: the peek
// at the next row, then 500 rows with their stored bodies, as
// Replayer.take does. No fsync: allocs/op and CPU are the read path's.
func BenchmarkOutboxBatchRead(b *testing.B) {
	ctx := context.Background()
	j, err := Open(ctx, filepath.Join(b.TempDir(), "journal.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	for i := 0; i < 1000; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		after := int64(i%2) * 500
		if peek, err := j.OutboxAfter(ctx, after, 1, 1<<20); err != nil || len(peek) != 1 {
			b.Fatalf("peek: %d rows, %v", len(peek), err)
		}
		if rows, err := j.OutboxAfter(ctx, after, 500, 1<<20); err != nil || len(rows) != 500 {
			b.Fatalf("batch: %d rows, %v", len(rows), err)
		}
	}
}

// BenchmarkStats times the journal's figures on a journal of 20,000 and
// of 2,000,000 acknowledged rows (a few weeks of a busy store that HQ has
// confirmed): BacklogStats, which the replayer reads every few seconds
// and the daemon for each status, must stay flat; Stats adds the last
// ack's time, a read of every acknowledged row. The figures quoted in
// docs/performance.md come from
// go test -run '^$' -bench Stats -benchtime 3x ./offline/journal/
func BenchmarkStats(b *testing.B) {
	for _, rows := range []int{20_000, 2_000_000} {
		j := grownJournal(b, rows)
		for _, c := range []struct {
			name string
			read func(context.Context) (Stats, error)
		}{
			{"BacklogStats", j.BacklogStats},
			{"Stats", j.Stats},
		} {
			b.Run(fmt.Sprintf("%s/rows=%d", c.name, rows), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					st, err := c.read(context.Background())
					if err != nil || st.Rows != int64(rows) {
						b.Fatalf("%s: %d rows, %v", c.name, st.Rows, err)
					}
				}
			})
		}
	}
}

// grownJournal is a journal holding n acknowledged, confirmed sales of
// an earlier day, inserted in one statement (Append would take minutes
// for millions).
func grownJournal(b *testing.B, n int) *Journal {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	at := ts(time.Now().Add(-48 * time.Hour))
	// A body of a sale's size (as make bench's grown journal has): the
	// scans read the pages it fills.
	body := `{"store_id":"S1","terminal_id":"T01","kind":"sale","total_cents":199,"tender":"cash","lines":[{"barcode":"BENCH2","qty":1,"price_cents":199}]}`
	if _, err := j.w.ExecContext(ctx, `WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM c WHERE n < ?)
		INSERT INTO txns (flow_no, seq, terminal_id, idem_key, fingerprint, kind, tender, total_cents, business_day,
			business_hour, created_at, body, mode, applied, state, journaled_at, acked_at, first_acked_at, confirmed_at)
		SELECT printf('B%015d', n), n, 'T01', printf('bulk-%d', n), 'fp', 'sale', 'cash', 199, '20260101', '2026010112',
			?2, ?3, 'normal', 1, 'acked', ?2, ?2, ?2, ?2 FROM c`, n, at, body); err != nil {
		b.Fatalf("grow the journal to %d rows: %v", n, err)
	}
	b.Cleanup(func() { j.Close() })
	return j
}
