package journal

import (
	"context"
	"path/filepath"
	"testing"
)

func degraded(n int) Txn {
	t := sale(n)
	t.FlowNo, t.Seq, t.Mode, t.Applied = "20"+t.FlowNo[2:], 0, ModeDegraded, false
	return t
}

// A transaction Redis cannot apply is set aside: it leaves the waiting
// list (so the ones behind it are applied and degraded mode can end),
// is listed with its reason, counted in Stats, and goes back on retry.
func TestUnappliableLeavesTheWaitingListUntilRetried(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	for i := 1; i <= 3; i++ {
		if err := j.Append(ctx, degraded(i)); err != nil {
			t.Fatal(err)
		}
	}
	poison := degraded(1).FlowNo
	if err := j.SetUnappliable(ctx, poison, "txn.lua: invalid_amount total_cents"); err != nil {
		t.Fatal(err)
	}
	waiting, err := j.Unapplied(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(waiting) != 2 || waiting[0].FlowNo != degraded(2).FlowNo {
		t.Fatalf("waiting %+v", waiting)
	}
	if err := j.MarkApplied(ctx, degraded(2).FlowNo, degraded(3).FlowNo); err != nil {
		t.Fatal(err)
	}
	if has, _ := j.HasUnapplied(ctx); has {
		t.Fatal("an unappliable transaction still counts as waiting")
	}
	st, _ := j.Stats(ctx)
	if st.Unappliable != 1 || st.Unapplied != 0 {
		t.Fatalf("stats %+v", st)
	}
	list, err := j.Unappliable(ctx)
	if err != nil || len(list) != 1 || list[0].FlowNo != poison || list[0].Reason != "txn.lua: invalid_amount total_cents" {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := j.SetUnappliable(ctx, poison, "again"); err == nil {
		t.Fatal("set aside twice")
	}
	if err := j.SetUnappliable(ctx, "29999", "x"); err == nil {
		t.Fatal("an unknown flow number was set aside")
	}
	if n, err := j.RetryUnappliable(ctx, "29999"); err != nil || n != 0 {
		t.Fatalf("retry of an unknown flow: %d %v", n, err)
	}
	if n, err := j.RetryUnappliable(ctx); err != nil || n != 1 {
		t.Fatalf("retry all: %d %v", n, err)
	}
	waiting, _ = j.Unapplied(ctx, 10)
	st, _ = j.Stats(ctx)
	if len(waiting) != 1 || waiting[0].FlowNo != poison || st.Unappliable != 0 {
		t.Fatalf("after retry: %+v %+v", waiting, st)
	}
}

// A journal written before the unappliable table existed gets it on open.
func TestOpenAddsTheUnappliableTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(ctx, degraded(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := j.w.ExecContext(ctx, `DROP TABLE unappliable`); err != nil {
		t.Fatal(err)
	}
	j.Close()
	j = reopen(t, path)
	if err := j.SetUnappliable(ctx, degraded(1).FlowNo, "r"); err != nil {
		t.Fatal(err)
	}
	if st, _ := j.Stats(ctx); st.Unappliable != 1 || st.Rows != 1 {
		t.Fatalf("stats %+v", st)
	}
}
