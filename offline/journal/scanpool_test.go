package journal

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/internal/testenv/racebuild"
)

// A till's idempotency lookup never waits for the reads that walk the
// whole file. On a large journal the daemon runs several of them at once
// right after start (quick_check, the replay's stats, prune's search,
// the reconciliation); when they shared the tills' four reader
// connections, a restarted daemon's first sale waited 874 ms for one on
// a million rows (24 ms with the scan pool). Here six scans loop on a
// journal big enough that one takes a clear while, and lookups in the
// meantime must answer in a small part of one scan's time: with one
// pool, each waited for a scan to end.
func TestTillReadsDoNotWaitForScans(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	testenv.FillJournal(t, path, racebuild.Scale(200_000, 4))
	if j, err = Open(ctx, path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer j.Close()

	start := time.Now()
	if err := j.QuickCheck(ctx); err != nil {
		t.Fatal(err)
	}
	scanTook := time.Since(start)

	sctx, stop := context.WithCancel(ctx)
	var scans sync.WaitGroup
	for i := range 6 {
		scans.Go(func() {
			for sctx.Err() == nil {
				switch i % 3 {
				case 0:
					_ = j.QuickCheck(sctx)
				case 1:
					_, _ = j.Stats(sctx)
				default:
					_, _ = j.prunable(sctx, time.Now().Add(time.Hour), 500)
				}
			}
		})
	}
	var waits []time.Duration
	deadline := time.Now().Add(3 * scanTook)
	for time.Now().Before(deadline) || len(waits) < 10 {
		t0 := time.Now()
		if _, err := j.ByKey(ctx, "T01", "big-7"); err != nil {
			t.Fatalf("lookup: %v", err)
		}
		waits = append(waits, time.Since(t0))
		time.Sleep(scanTook / 20)
	}
	stop()
	scans.Wait()
	slices.Sort(waits)
	median, longest := waits[len(waits)/2], waits[len(waits)-1]
	t.Logf("one quick_check %v; %d lookups beside six scans: median %v, longest %v", scanTook, len(waits), median, longest)
	if median > scanTook/10 || longest > scanTook/2 {
		t.Fatalf("lookups waited for the scans: median %v, longest %v, one scan %v", median, longest, scanTook)
	}
}
