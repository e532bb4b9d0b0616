package journal

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"
)

// TestConfirmationLifecycle: acked → asked about once confirm_after has
// passed → confirmed, or lacking: back in the outbox, asked about again
// no sooner than its due time; Prune deletes only confirmed rows.
func TestConfirmationLifecycle(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	j := openTemp(t, Options{Now: clk.now})
	for i := 1; i <= 6; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := j.Outbox(ctx, 10, 1<<20)
	if err != nil || len(out) != 6 {
		t.Fatalf("outbox %d %v", len(out), err)
	}
	ids := func(from, to int) []int64 {
		var s []int64
		for _, o := range out[from-1 : to] {
			s = append(s, o.RowID)
		}
		return s
	}
	if err := j.MarkAckedRows(ctx, ids(1, 4)...); err != nil {
		t.Fatal(err)
	}
	if err := j.MarkAckedDuplicateRows(ctx, ids(5, 6)...); err != nil {
		t.Fatal(err)
	}
	acked := clk.t
	dups := 0
	due := func(after time.Duration) []string {
		t.Helper()
		us, err := j.DueUnconfirmed(ctx, clk.t.Add(-after), clk.t, 100)
		if err != nil {
			t.Fatal(err)
		}
		var fs []string
		for _, u := range us {
			fs = append(fs, u.FlowNo)
			if u.DupAck {
				dups++
			}
		}
		return fs
	}
	if got := due(30 * time.Second); len(got) != 0 {
		t.Fatalf("due before confirm_after: %v", got)
	}
	clk.t = acked.Add(30 * time.Second)
	if got := due(30 * time.Second); len(got) != 6 || dups != 2 {
		t.Fatalf("due after confirm_after: %v (%d with a duplicate ack), want all 6 (2)", got, dups)
	}
	st, _ := j.Stats(ctx)
	if st.Unconfirmed != 6 || st.OldestUnconfirmedAck == nil || !st.OldestUnconfirmedAck.Equal(acked) || st.Backlog != 0 {
		t.Fatalf("stats: %+v", st)
	}

	// HQ holds 1, 2 and 5; lacks 3, 4 and 6.
	if n, err := j.MarkConfirmed(ctx, sale(1).FlowNo, sale(2).FlowNo, sale(5).FlowNo); err != nil || n != 3 {
		t.Fatalf("confirmed %d %v", n, err)
	}
	if n, _ := j.MarkConfirmed(ctx, sale(1).FlowNo); n != 0 {
		t.Errorf("a second confirmation counted %d", n)
	}
	next := clk.t.Add(time.Minute)
	if n, err := j.MarkLacking(ctx, next, sale(3).FlowNo, sale(4).FlowNo, sale(6).FlowNo, sale(1).FlowNo); err != nil || n != 3 {
		t.Fatalf("lacking %d %v (a confirmed row must not go back)", n, err)
	}
	st, _ = j.Stats(ctx)
	if st.Unconfirmed != 0 || st.Backlog != 3 {
		t.Fatalf("after HQ's answer: %+v", st)
	}
	out, _ = j.Outbox(ctx, 10, 1<<20)
	if len(out) != 3 {
		t.Fatalf("outbox after lacking: %+v", out)
	}
	for _, o := range out {
		if err := j.MarkAckedRows(ctx, o.RowID); err != nil {
			t.Fatal(err)
		}
	}
	clk.t = clk.t.Add(31 * time.Second) // acked 31 s ago, but due in a minute
	if got := due(30 * time.Second); len(got) != 0 {
		t.Fatalf("asked again before its due time: %v", got)
	}
	clk.t = next
	if got := due(30 * time.Second); len(got) != 3 {
		t.Fatalf("due again: %v", got)
	}
	var lacks, resends int
	if err := j.r.QueryRow(`SELECT lacks, resends FROM txns WHERE flow_no = ?`, sale(6).FlowNo).Scan(&lacks, &resends); err != nil || lacks != 0 || resends != 1 {
		t.Errorf("row 6 (duplicate ack) lacks %d resends %d %v, want 0 1", lacks, resends, err)
	}
	if d, ok, err := j.DeliveryOf(ctx, sale(3).FlowNo); err != nil || !ok || d.Resends != 1 || d.ConfirmedAt != nil || d.State != StateAcked {
		t.Errorf("delivery of row 3: %+v %v %v", d, ok, err)
	}

	// Only the confirmed rows are pruned, however old.
	n, err := j.Prune(ctx, clk.t.Add(24*time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("pruned %d %v, want the 3 confirmed", n, err)
	}
	for _, i := range []int{3, 4, 6} {
		if row, _ := j.ByFlow(ctx, sale(i).FlowNo); row == nil {
			t.Errorf("unconfirmed row %d pruned", i)
		}
	}
}

// TestUpgradeAddsConfirmationToAnOlderJournal: a journal of schema
// version 1 (no confirmation columns) reads read-only with every acked
// row unconfirmed, and is upgraded in place at the next writable open:
// its acked rows are asked about, none is pruned before HQ confirms it.
func TestUpgradeAddsConfirmationToAnOlderJournal(t *testing.T) {
	ctx := context.Background()
	acked := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	path := oldJournal(t, func(db *sql.DB) {
		for _, c := range confirmColumns() {
			if _, err := db.Exec(`ALTER TABLE txns DROP COLUMN ` + c[0]); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= 3; i++ {
			if _, err := db.Exec(`INSERT INTO txns (flow_no, seq, terminal_id, idem_key, fingerprint, kind, tender, total_cents, business_day,
				business_hour, created_at, body, mode, applied, state, journaled_at, acked_at)
				VALUES (?, ?, 'T01', ?, 'fp', 'sale', 'cash', 1, '20261101', '10', ?, '{}', 'normal', 1, 'acked', ?, ?)`,
				fmt.Sprintf("1%015d", i), i, fmt.Sprintf("k%d", i), ts(acked), ts(acked), ts(acked)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(`INSERT INTO meta VALUES (?, '1')`, MetaSchemaVersion); err != nil {
			t.Fatal(err)
		}
	})
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := ro.Stats(ctx); err != nil || st.Unconfirmed != 3 {
		t.Errorf("read-only stats of the older journal: %+v %v, want 3 unconfirmed", st, err)
	}
	ro.Close()

	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	defer j.Close()
	if v, _ := readSchemaVersion(ctx, j.r); v != schemaVersion {
		t.Errorf("schema version %d, want %d", v, schemaVersion)
	}
	us, err := j.DueUnconfirmed(ctx, acked, time.Now(), 10)
	if err != nil || len(us) != 3 {
		t.Fatalf("unconfirmed after the upgrade: %+v %v", us, err)
	}
	if n, err := j.Prune(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("pruned %d %v before HQ confirmed", n, err)
	}
	if _, err := j.MarkConfirmed(ctx, us[0].FlowNo); err != nil {
		t.Fatal(err)
	}
	if n, err := j.Prune(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("pruned %d %v, want the one confirmed", n, err)
	}
}

// TestUnconfirmedAgeCountsFromTheFirstAck: a row HQ keeps lacking is
// resent and acked again, time after time; its age as unconfirmed (the
// status's WARN) counts from its first ack, not the last resend's, and
// HQ is asked about it with the stream sequence of its last ack. A row
// HQ lost after confirming it starts a new way: its age counts from its
// next ack.
func TestUnconfirmedAgeCountsFromTheFirstAck(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	j := openTemp(t, Options{Now: clk.now})
	for i := 1; i <= 2; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	ack := func(seq uint64, flow string) {
		t.Helper()
		id, err := j.RowIDOf(ctx, flow)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.MarkAckedSeqs(ctx, false, []Ack{{RowID: id, StreamSeq: seq}}); err != nil {
			t.Fatal(err)
		}
	}
	first := clk.t
	ack(7, sale(1).FlowNo)
	for round, seq := range []uint64{12, 19, 23} {
		clk.t = clk.t.Add(time.Minute)
		if n, err := j.MarkLacking(ctx, clk.t, sale(1).FlowNo); err != nil || n != 1 {
			t.Fatalf("round %d: lacking %d %v", round, n, err)
		}
		ack(seq, sale(1).FlowNo)
	}
	st, err := j.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Unconfirmed != 1 || st.OldestUnconfirmedAck == nil || !st.OldestUnconfirmedAck.Equal(first) {
		t.Errorf("after 3 resends: unconfirmed %d, oldest ack %v; want 1, %v (the first ack, 3 minutes ago)",
			st.Unconfirmed, st.OldestUnconfirmedAck, first)
	}
	us, err := j.DueUnconfirmed(ctx, clk.t, clk.t, 10)
	if err != nil || len(us) != 1 || us[0].StreamSeq != 23 {
		t.Fatalf("due: %+v %v, want the row with stream sequence 23 (its last ack's)", us, err)
	}

	// Confirmed, then lost at HQ (an audit finds it gone): a new way.
	if _, err := j.MarkConfirmed(ctx, sale(1).FlowNo); err != nil {
		t.Fatal(err)
	}
	if n, err := j.MarkLost(ctx, sale(1).FlowNo); err != nil || n != 1 {
		t.Fatalf("lost %d %v", n, err)
	}
	clk.t = clk.t.Add(time.Hour)
	ack(40, sale(1).FlowNo)
	if st, _ := j.Stats(ctx); st.OldestUnconfirmedAck == nil || !st.OldestUnconfirmedAck.Equal(clk.t) {
		t.Errorf("after HQ lost it: oldest ack %v, want %v (its new ack)", st.OldestUnconfirmedAck, clk.t)
	}
}

// TestUpgradeAddsStreamSeqToAnOlderJournal: a journal of schema version
// 2 (delivery confirmation, no stream sequences) is upgraded in place:
// its acked rows keep their ack as their first, carry no stream
// sequence (HQ answers for them as before) and are asked about as
// before; a read-only open before the upgrade reads its stats.
func TestUpgradeAddsStreamSeqToAnOlderJournal(t *testing.T) {
	ctx := context.Background()
	acked := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	path := oldJournal(t, func(db *sql.DB) {
		for _, c := range streamSeqColumns() {
			if _, err := db.Exec(`ALTER TABLE txns DROP COLUMN ` + c[0]); err != nil {
				t.Fatal(err)
			}
		}
		for i := 1; i <= 3; i++ {
			if _, err := db.Exec(`INSERT INTO txns (flow_no, seq, terminal_id, idem_key, fingerprint, kind, tender, total_cents, business_day,
				business_hour, created_at, body, mode, applied, state, journaled_at, acked_at, resends)
				VALUES (?, ?, 'T01', ?, 'fp', 'sale', 'cash', 1, '20261101', '10', ?, '{}', 'normal', 1, 'acked', ?, ?, 1)`,
				fmt.Sprintf("1%015d", i), i, fmt.Sprintf("k%d", i), ts(acked), ts(acked), ts(acked.Add(time.Duration(i)*time.Minute))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(`INSERT INTO meta VALUES (?, '2')`, MetaSchemaVersion); err != nil {
			t.Fatal(err)
		}
	})
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := ro.Stats(ctx); err != nil || st.Unconfirmed != 3 || st.OldestUnconfirmedAck == nil {
		t.Errorf("read-only stats of the older journal: %+v %v, want 3 unconfirmed", st, err)
	}
	ro.Close()

	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	defer j.Close()
	if v, _ := readSchemaVersion(ctx, j.r); v != schemaVersion {
		t.Errorf("schema version %d, want %d", v, schemaVersion)
	}
	st, err := j.Stats(ctx)
	if err != nil || st.OldestUnconfirmedAck == nil || !st.OldestUnconfirmedAck.Equal(acked.Add(time.Minute)) {
		t.Errorf("stats after the upgrade: %+v %v, want the oldest ack %v", st, err, acked.Add(time.Minute))
	}
	us, err := j.DueUnconfirmed(ctx, time.Now(), time.Now(), 10)
	if err != nil || len(us) != 3 {
		t.Fatalf("unconfirmed after the upgrade: %+v %v", us, err)
	}
	for _, u := range us {
		if u.StreamSeq != 0 {
			t.Errorf("row %s: stream sequence %d after the upgrade, want 0 (unknown)", u.FlowNo, u.StreamSeq)
		}
	}
}
