package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

func openTemp(t *testing.T, o Options) *Journal {
	t.Helper()
	j, err := Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// journalWithSales makes a journal at path holding sale(1..n), closed:
// a file to open again as a restarted daemon would.
func journalWithSales(t *testing.T, path string, n int) {
	t.Helper()
	ctx := context.Background()
	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// reopen opens the journal file at path again, writable, closed when the
// test ends.
func reopen(t *testing.T, path string) *Journal {
	t.Helper()
	j, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("open %s again: %v", filepath.Base(path), err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func sale(n int) Txn {
	return Txn{FlowNo: fmt.Sprintf("1%015d", n), Seq: int64(n), TerminalID: "T01", IdemKey: fmt.Sprintf("k%d", n),
		Fingerprint: "fp", Kind: "sale", Tender: "cash", TotalCents: 199, BusinessDay: "20261130", BusinessHour: "10",
		CreatedAt: time.Now(), Lines: []Line{{Barcode: "A", Qty: 1, PriceCents: 199}}, Body: []byte(`{"x":1}`), Applied: true}
}

func TestConcurrentAppendsAreAllDurable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := 1; i <= 200; i++ {
		wg.Add(1)
		go func(i int) { defer wg.Done(); errs <- j.Append(ctx, sale(i)) }(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Reopen as another process would after a crash: the files copied as
	// they are now, with the journal still open (no clean close, no
	// checkpoint: the rows live in the WAL), are what a killed daemon
	// leaves, and every row is in them.
	crashed := filepath.Join(t.TempDir(), "crashed.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatalf("copy the journal as the crash leaves it: %v", err)
		}
		if err := os.WriteFile(crashed+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	defer j.Close()
	j2, err := Open(ctx, crashed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	st, _ := j2.Stats(ctx)
	if st.Rows != 200 || st.Backlog != 200 {
		t.Fatalf("stats %+v", st)
	}
	if m, _ := j2.MaxSeq(ctx); m != 200 {
		t.Fatalf("max seq %d", m)
	}
}

func TestDuplicatesAreRefusedAloneInTheirBatch(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	if err := j.Append(ctx, sale(1)); err != nil {
		t.Fatal(err)
	}
	dupKey := sale(2)
	dupKey.IdemKey = "k1"
	dupFlow := sale(3)
	dupFlow.FlowNo = sale(1).FlowNo
	var wg sync.WaitGroup
	var e2, e3, e4 error
	wg.Add(3)
	go func() { defer wg.Done(); e2 = j.Append(ctx, dupKey) }()
	go func() { defer wg.Done(); e3 = j.Append(ctx, dupFlow) }()
	go func() { defer wg.Done(); e4 = j.Append(ctx, sale(4)) }()
	wg.Wait()
	if !errors.Is(e2, ErrDuplicateKey) || !errors.Is(e3, ErrDuplicateFlow) || e4 != nil {
		t.Fatalf("dup key: %v, dup flow: %v, fresh: %v", e2, e3, e4)
	}
	got, _ := j.ByKey(ctx, "T01", "k1")
	if got == nil || got.FlowNo != sale(1).FlowNo || len(got.Lines) != 1 {
		t.Fatalf("by key: %+v", got)
	}
}

func TestFullDiskIsUnavailableAndRecovers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{MaxPageCount: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var failed error
	n := 0
	for i := 1; i <= 2000 && failed == nil; i++ {
		s := sale(i)
		s.Body = make([]byte, 2000)
		failed = j.Append(ctx, s)
		n = i
	}
	if !errors.Is(failed, ErrUnavailable) {
		t.Fatalf("after %d rows: %v", n, failed)
	}
	if got, _ := j.ByFlow(ctx, sale(n).FlowNo); got != nil {
		t.Fatal("a refused row is in the journal")
	}
	if got, _ := j.ByFlow(ctx, sale(n-1).FlowNo); got == nil {
		t.Fatal("an acknowledged row is gone")
	}
	// Still full: a second try is refused the same way, and the journal
	// still answers reads.
	refused := sale(n)
	refused.Body = make([]byte, 2000)
	if err := j.Append(ctx, refused); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("append on a full disk again: %v", err)
	}
	// Recovery: space comes back (the limit lifted, as a daemon restarted
	// on a grown disk sees it); the refused sale is journaled on its
	// retry, and every acknowledged row is still there, once.
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen after the disk filled: %v", err)
	}
	defer j2.Close()
	if err := j2.Append(ctx, refused); err != nil {
		t.Fatalf("the refused sale's retry once space is back: %v", err)
	}
	st, err := j2.Stats(ctx)
	if err != nil || st.Rows != int64(n) {
		t.Fatalf("after recovery %d rows (%v), want %d", st.Rows, err, n)
	}
	if m, _ := j2.MaxSeq(ctx); m != int64(n) {
		t.Fatalf("max seq %d, want %d", m, n)
	}
}

func TestOutboxStatesAndQuarantine(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	for i := 1; i <= 5; i++ {
		j.Append(ctx, sale(i))
	}
	out, err := j.Outbox(ctx, 3, 1<<20)
	if err != nil || len(out) != 3 || out[0].FlowNo != sale(1).FlowNo {
		t.Fatalf("outbox %v %v", out, err)
	}
	j.MarkSent(ctx, out[0].FlowNo, out[1].FlowNo)
	j.MarkAcked(ctx, out[0].FlowNo)
	j.Quarantine(ctx, out[1].FlowNo, "too large")
	out, _ = j.Outbox(ctx, 10, 1<<20)
	if len(out) != 3 || out[0].FlowNo != sale(3).FlowNo {
		t.Fatalf("outbox after ack/quarantine %v", out)
	}
	st, _ := j.Stats(ctx)
	if st.Backlog != 3 || st.Quarantined != 1 || st.LastAckedAt == nil {
		t.Fatalf("stats %+v", st)
	}
	// The replayer's figures are the same but the last ack's time.
	bs, err := j.BacklogStats(ctx)
	st.LastAckedAt = nil
	if err != nil || !reflect.DeepEqual(bs, st) {
		t.Fatalf("backlog stats %+v (%v), want %+v", bs, err, st)
	}
	if n, _ := j.RetryQuarantined(ctx); n != 1 {
		t.Fatalf("retried %d", n)
	}
	if out, _ = j.Outbox(ctx, 10, 1<<20); len(out) != 4 {
		t.Fatalf("outbox after retry %v", out)
	}
	if out, _ = j.Outbox(ctx, 10, 10); len(out) != 1 {
		t.Fatalf("byte cap: %d rows", len(out))
	}
}

func TestBackupIsAConsistentCopy(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	for i := 1; i <= 10; i++ {
		j.Append(ctx, sale(i))
	}
	dest := filepath.Join(t.TempDir(), "copy.db")
	if err := j.Backup(ctx, dest); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, dest, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if st, _ := c.Stats(ctx); st.Rows != 10 {
		t.Fatalf("copy has %d rows", st.Rows)
	}
	if err := c.Verify(ctx); err != nil {
		t.Fatal(err)
	}
}

// A batch of appends commits without a savepoint per write (each made
// SQLite copy the pages it touched into its statement journal, issue 26);
// when one of them fails the batch is rolled back whole, nothing durable,
// and commit runs it again one savepoint per write, which refuses the
// failing one alone. A batch holding a write that may not run twice never
// takes the plain path.
func TestAppendBatchCommitsWithoutSavepoints(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	req := func(fn func(*sql.Tx) error, rerun bool) *writeReq {
		return &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), rerun: rerun}
	}
	rows := func() (n int) {
		if err := j.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM txns`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	plain := []*writeReq{req(j.inserts(sale(1)), true), req(j.inserts(sale(2)), true)}
	if !j.commitPlain(plain) {
		t.Fatal("a batch of fresh appends did not commit on the plain path")
	}
	for i, r := range plain {
		if err := <-r.done; err != nil {
			t.Fatalf("append %d: %v", i+1, err)
		}
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after the plain commit, want 2", n)
	}

	dup := sale(4)
	dup.IdemKey = "k1"
	mixed := []*writeReq{req(j.inserts(sale(3)), true), req(j.inserts(dup), true), req(j.inserts(sale(5)), true)}
	if j.commitPlain(mixed) {
		t.Fatal("a batch with a duplicate key committed on the plain path")
	}
	if n := rows(); n != 2 {
		t.Fatalf("%d rows after the plain path gave up, want 2: it left part of its batch", n)
	}
	j.commit(mixed)
	errs := []error{<-mixed[0].done, <-mixed[1].done, <-mixed[2].done}
	if errs[0] != nil || !errors.Is(errs[1], ErrDuplicateKey) || errs[2] != nil {
		t.Fatalf("batch with a duplicate, again with savepoints: %v", errs)
	}
	if n := rows(); n != 4 {
		t.Fatalf("%d rows, want 4: the duplicate alone refused", n)
	}

	ran := false
	once := req(func(*sql.Tx) error { ran = true; return nil }, false)
	if j.commitPlain([]*writeReq{req(j.inserts(sale(6)), true), once}) || ran {
		t.Fatal("a write that may not run twice went on the plain path")
	}
}

// A write after Close is refused, never left waiting: with the writer gone
// a send into the request buffer can still win the select against the
// closed stop channel (about one try in two), and that request used to
// wait forever (TestAnswersMatchOpenAPI hung the CI gate 40 minutes on a
// sale after the journal was closed).
func TestWriteAfterCloseIsRefused(t *testing.T) {
	ctx := context.Background()
	j, err := Open(ctx, filepath.Join(t.TempDir(), "journal.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 200; i++ {
		done := make(chan error, 1)
		go func() { done <- j.Append(ctx, sale(i)) }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("append %d after Close: %v, want ErrUnavailable", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("append %d after Close still waiting after 5 s", i)
		}
	}
}
