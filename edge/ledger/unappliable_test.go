package ledger_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// A degraded-mode transaction Redis refuses for a reason other than an
// outage (here: its item's stock in Redis is not a number, so txn.lua
// refuses it before any write) is set aside in the journal. The ones
// behind it are applied, the store leaves degraded mode, the refused one
// is never half-applied on later ticks, and once the cause is fixed a
// retry applies it exactly once.
func TestUnappliableTransactionIsSetAsideAndNeverBlocks(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("X", 100, 10)
	e.putItem("Y", 100, 10)
	e.l.SetRedisDown(true)
	poison := e.mustSale("T01", "p1", sale1("X", 2, 100))
	ok1 := e.mustSale("T01", "o1", sale1("Y", 1, 100))
	ok2 := e.mustSale("T02", "o2", sale1("Y", 3, 100))
	for _, r := range []*ledger.Result{poison, ok1, ok2} {
		if !strings.HasPrefix(r.FlowNo, "20") {
			t.Fatalf("not a degraded flow number: %s", r.FlowNo)
		}
	}
	itemKeys, err := e.rdb.Keys(e.ctx, "*item:X").Result()
	if err != nil || len(itemKeys) != 1 {
		t.Fatalf("item key of X: %v %v", itemKeys, err)
	}
	if err := e.rdb.HSet(e.ctx, itemKeys[0], "stock", "ten").Err(); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(e.ctx)
	watched := make(chan struct{})
	go func() { e.l.Watch(ctx, 50*time.Millisecond, ""); close(watched) }()
	t.Cleanup(func() { stop(); <-watched })
	testenv.WaitFor(t, 10*time.Second, "degraded mode left despite an unappliable transaction", func() bool { return !e.l.Degraded() })

	if got := e.stock("Y"); got != 6 {
		t.Fatalf("stock of Y %d, want 6 (the transactions behind the refused one applied)", got)
	}
	if got := e.today(); got != (ledger.Totals{Sales: 2, SalesCents: 400}) {
		t.Fatalf("day totals %+v, want the two applied sales only", got)
	}
	set, err := e.j.Unappliable(e.ctx)
	if err != nil || len(set) != 1 || set[0].FlowNo != poison.FlowNo || !strings.Contains(set[0].Reason, "corrupt") {
		t.Fatalf("set aside %+v %v", set, err)
	}
	if has, _ := e.j.HasUnapplied(e.ctx); has {
		t.Fatal("the set-aside transaction still waits for Redis")
	}
	// Later ticks leave it alone: X's stock is untouched however many run.
	// Proven by a marker through the same path, not a pause: a later
	// degraded sale, applied by a later tick's pass over the journal.
	markers := 0
	for degraded := false; !degraded; markers++ {
		if markers == 20 {
			t.Fatal("no marker sale was journaled in degraded mode")
		}
		e.l.SetRedisDown(true)
		m := e.mustSale("T01", fmt.Sprintf("marker%d", markers), sale1("Y", 1, 100))
		degraded = strings.HasPrefix(m.FlowNo, "20")
	}
	testenv.WaitFor(t, 10*time.Second, "a later tick applied the marker sale", func() bool {
		has, err := e.j.HasUnapplied(e.ctx)
		return err == nil && !has && !e.l.Degraded()
	})
	if v, _ := e.rdb.HGet(e.ctx, itemKeys[0], "stock").Result(); v != "ten" {
		t.Fatalf("stock of X changed to %q while set aside", v)
	}

	// The operator fixes the cause and retries: applied once.
	if err := e.rdb.HSet(e.ctx, itemKeys[0], "stock", "10").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := e.j.RetryUnappliable(e.ctx, poison.FlowNo); err != nil || n != 1 {
		t.Fatalf("retry: %d %v", n, err)
	}
	testenv.WaitFor(t, 10*time.Second, "the retried transaction applied", func() bool {
		has, err := e.j.HasUnapplied(e.ctx)
		return err == nil && !has
	})
	if got := e.stock("X"); got != 8 {
		t.Fatalf("stock of X %d, want 8", got)
	}
	if got := e.today(); got != (ledger.Totals{Sales: 3 + int64(markers), SalesCents: 600 + 100*int64(markers)}) {
		t.Fatalf("day totals %+v after the retry", got)
	}
	if n, err := e.l.ApplyDegraded(e.ctx); err != nil || n != 0 {
		t.Fatalf("apply again: %d %v", n, err)
	}
	if got := e.stock("X"); got != 8 {
		t.Fatalf("stock of X %d after applying again, want 8", got)
	}
}
