package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestOutboxNeverSorts: the outbox is read from the partial index in
// journal order, never through a temporary B-tree that would sort the
// whole backlog for every batch, and the batch marks are one statement.
func TestOutboxNeverSorts(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	for i := 1; i <= 50; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []struct {
		name, sql string
		args      []any
	}{
		{"outbox", outboxQuery, []any{0, 500}},
		{"mark", `UPDATE txns SET attempts = attempts + 1 WHERE ` + inFlows, []any{`["1"]`}},
	} {
		all := queryPlan(t, j, q.sql, q.args...)
		t.Logf("%s: %s", q.name, all)
		if strings.Contains(all, "TEMP B-TREE") || strings.Contains(all, "SCAN txns") {
			t.Errorf("%s sorts or scans the table: %s", q.name, all)
		}
		if q.name == "outbox" && strings.Count(all, "txns_outbox") != 2 {
			t.Errorf("outbox does not read both states from txns_outbox: %s", all)
		}
	}
}

// TestOutboxOrderAcrossStates: rows sent once (no ack yet) and rows never
// sent come out merged in journal order, whatever their state.
func TestOutboxOrderAcrossStates(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	var all []string
	for i := 1; i <= 1200; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
		all = append(all, sale(i).FlowNo)
	}
	// Every third row sent, every seventh acked, row 10 quarantined: one
	// statement each for lists longer than SQLite's parameter limit.
	var sent, acked []string
	for i := 1; i <= 1200; i++ {
		if i%3 == 0 {
			sent = append(sent, sale(i).FlowNo)
		}
		if i%7 == 0 {
			acked = append(acked, sale(i).FlowNo)
		}
	}
	if err := j.MarkSent(ctx, sent...); err != nil {
		t.Fatal(err)
	}
	if err := j.MarkSent(ctx, sent[:10]...); err != nil {
		t.Fatal(err)
	}
	if err := j.MarkFailed(ctx, "timeout", sent...); err != nil {
		t.Fatal(err)
	}
	if err := j.MarkAcked(ctx, acked...); err != nil {
		t.Fatal(err)
	}
	if err := j.Quarantine(ctx, sale(10).FlowNo, "too large"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 1; i <= 1200; i++ {
		if i%7 != 0 && i != 10 {
			want = append(want, sale(i).FlowNo)
		}
	}
	got, err := j.Outbox(ctx, 5000, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("outbox holds %d rows, want %d", len(got), len(want))
	}
	for i, o := range got {
		if o.FlowNo != want[i] {
			t.Fatalf("outbox row %d is %s, want %s", i, o.FlowNo, want[i])
		}
	}
	first, err := j.Outbox(ctx, 500, 1<<30)
	if err != nil || len(first) != 500 || first[499].FlowNo != want[499] {
		t.Fatalf("first batch: %d rows, %v", len(first), err)
	}
	next, err := j.OutboxAfter(ctx, first[499].RowID, 500, 1<<30)
	if err != nil || len(next) != 500 || next[0].FlowNo != want[500] || next[499].FlowNo != want[999] {
		t.Fatalf("batch after the first: %d rows, %v", len(next), err)
	}
	for _, f := range []int{3, 6, 9} {
		row, err := j.ByFlow(ctx, sale(f).FlowNo)
		if err != nil {
			t.Fatal(err)
		}
		if row.State != StateSent || row.Attempts != 2 || row.LastError != "timeout" {
			t.Fatalf("row %d: state %s attempts %d error %q", f, row.State, row.Attempts, row.LastError)
		}
	}
	if row, _ := j.ByFlow(ctx, sale(21).FlowNo); row.State != StateAcked || row.LastError != "" {
		t.Fatalf("row 21 (sent, failed, then acked): %+v", row)
	}
	if row, _ := j.ByFlow(ctx, sale(1).FlowNo); row.State != StatePending || row.Attempts != 0 {
		t.Fatalf("row 1 untouched: %+v", row)
	}

	// MarkApplied in one statement too.
	un := make([]string, 0, 1000)
	for i := 2001; i <= 3000; i++ {
		s := sale(i)
		s.Applied = false
		if err := j.Append(ctx, s); err != nil {
			t.Fatal(err)
		}
		un = append(un, s.FlowNo)
	}
	if err := j.MarkApplied(ctx, un...); err != nil {
		t.Fatal(err)
	}
	if has, err := j.HasUnapplied(ctx); err != nil || has {
		t.Fatalf("unapplied rows left after MarkApplied: %v %v", has, err)
	}
	if err := j.MarkAcked(ctx, "no-such-flow"); err != nil {
		t.Fatalf("marking an unknown flow number: %v", err)
	}
}

// TestSentMarkAndRowAcks: MarkSentThrough marks a whole batch as handed
// to NATS with one small write (rows below it are MaybeSent, never the
// rows after), never moves back, and stops counting once its row is
// gone; MarkAckedRows acks by row.
func TestSentMarkAndRowAcks(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	for i := 1; i <= 10; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	maybe := func() []bool {
		t.Helper()
		out, err := j.Outbox(ctx, 100, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var m []bool
		for _, o := range out {
			m = append(m, o.MaybeSent)
		}
		return m
	}
	if m := maybe(); len(m) != 10 || m[0] || m[9] {
		t.Fatalf("fresh outbox: maybe sent %v", m)
	}
	out, _ := j.Outbox(ctx, 4, 1<<20)
	if err := j.MarkSentThrough(ctx, out[3].RowID, out[3].FlowNo); err != nil {
		t.Fatal(err)
	}
	if err := j.MarkSentThrough(ctx, out[1].RowID, out[1].FlowNo); err != nil { // never back
		t.Fatal(err)
	}
	if err := j.MarkSent(ctx, sale(7).FlowNo); err != nil { // a failed publish counts too
		t.Fatal(err)
	}
	want := []bool{true, true, true, true, false, false, true, false, false, false}
	if m := maybe(); fmt.Sprint(m) != fmt.Sprint(want) {
		t.Fatalf("maybe sent %v, want %v", m, want)
	}
	if err := j.MarkAckedRows(ctx, out[0].RowID, out[1].RowID); err != nil {
		t.Fatal(err)
	}
	if row, _ := j.ByFlow(ctx, out[0].FlowNo); row.State != StateAcked {
		t.Fatalf("row acked by rowid: %+v", row)
	}
	if m := maybe(); len(m) != 8 || !m[0] || !m[1] || m[2] {
		t.Fatalf("after acks: maybe sent %v", m)
	}
	// The marked row pruned (rowids may then be reused): the mark no
	// longer counts.
	if _, err := j.w.Exec(`DELETE FROM txns WHERE rowid = ?`, out[3].RowID); err != nil {
		t.Fatal(err)
	}
	if m := maybe(); m[0] {
		t.Fatalf("a mark whose row is gone still counts: %v", m)
	}
}

// queryPlan is SQLite's EXPLAIN QUERY PLAN of query on the journal's
// readers, its steps joined with "; ".
func queryPlan(t *testing.T, j *Journal, query string, args ...any) string {
	t.Helper()
	rows, err := j.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// TestPerSaleQueriesUseIndexes: the reads a sale or refund makes go
// through an index, whatever the journal's size. A table scan here costs
// every sale the whole journal: refunds scanned every line until the
// partial index's WHERE was repeated in refundedQuery.
func TestPerSaleQueriesUseIndexes(t *testing.T) {
	j := openTemp(t, Options{})
	for _, q := range []struct {
		name, sql, index string
		args             []any
	}{
		{"refunded", refundedQuery, "txns_original", []any{"100"}},
		{"by key", byKeyQuery, "sqlite_autoindex_txns_2", []any{"T1", "k"}},
		{"by flow", byFlowQuery, "sqlite_autoindex_txns_1", []any{"100"}},
	} {
		t.Run(q.name, func(t *testing.T) {
			plan := queryPlan(t, j, q.sql, q.args...)
			if strings.Contains(plan, "SCAN") || !strings.Contains(plan, "USING INDEX "+q.index) {
				t.Errorf("plan scans or does not use %s: %s", q.index, plan)
			}
		})
	}
}

// TestBacklogStatsReadByIndex: the figures the replayer reads every few
// seconds never read the table itself (2.1-2.4 s a time at 2,000,000 rows
// while the quarantined count and the last ack's time did). The rows'
// count walks the smallest index, the unconfirmed ones walk their partial
// index (the rows of an HQ outage, no more); every other figure searches
// one.
func TestBacklogStatsReadByIndex(t *testing.T) {
	j := openTemp(t, Options{})
	plan := queryPlan(t, j, j.backlogQuery())
	for _, step := range strings.Split(plan, "; ") {
		if strings.HasPrefix(step, "SCAN txns") && !strings.Contains(step, " INDEX ") {
			t.Errorf("backlog figures read the whole table: %s (plan: %s)", step, plan)
		}
	}
	if !strings.Contains(plan, "txns_quarantined") {
		t.Errorf("quarantined count not from txns_quarantined: %s", plan)
	}
}
