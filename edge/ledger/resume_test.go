package ledger_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/offline/journal"
)

// reapplyMark is the value of the ledger's re-apply resume mark
// ("<row id>:<flow no>"), "" when there is none. Found by its name's end,
// not the whole layout.
func (e *env) reapplyMark() string {
	e.t.Helper()
	names, err := e.rdb.Keys(e.ctx, "*reapplied:*").Result()
	if err != nil || len(names) > 1 {
		e.t.Fatalf("re-apply marks %v: %v", names, err)
	}
	if len(names) == 0 {
		return ""
	}
	return e.rdb.Get(e.ctx, names[0]).Val()
}

// forget deletes the idempotency records (those there) of keys m-<from>…m-<to-1> of
// T01: Redis "lost" them.
func (e *env) forget(from, to int) {
	e.t.Helper()
	for i := from; i < to; i++ {
		names, err := e.rdb.Keys(e.ctx, fmt.Sprintf("*idem:T01:m-%d", i)).Result()
		if err != nil {
			e.t.Fatalf("record of m-%d: %v", i, err)
		}
		if len(names) > 0 {
			e.rdb.Del(e.ctx, names...)
		}
	}
}

func (e *env) hasRecord(key string) bool {
	names, _ := e.rdb.Keys(e.ctx, "*idem:T01:"+key).Result()
	return len(names) == 1
}

// TestRepairResumesFromItsMark: a repair cut off while it re-applies the
// recent window resumes, at the next repair, after the last page it
// finished (the mark it left in Redis), instead of walking the whole
// window again — under recurring faults the walk from scratch never
// finished (issue 21). Rows under the mark are not walked again: their
// records, deleted after the cut, stay missing, while every row after it
// is re-applied. A complete repair leaves the mark at the last row; a
// degraded row waiting under it lowers it before it is applied, so a
// failover that loses that late apply is still caught.
func TestRepairResumesFromItsMark(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 100, 1_000_000)
	const n = 1500
	var last string
	for i := range n {
		last = e.mustSale("T01", fmt.Sprintf("m-%d", i), sale1("A", 1, 100)).FlowNo
	}
	e.forget(0, n)

	// A repair cut off after its first pages.
	ctx, cancel := context.WithCancel(e.ctx)
	go func() {
		for e.reapplyMark() == "" && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := e.l.Repair(ctx); err == nil {
		t.Fatal("repair cut off by its context answered no error")
	}
	cancel()
	mark := e.reapplyMark()
	markFlow := mark[strings.Index(mark, ":")+1:]
	if markFlow == last {
		t.Fatalf("the cut repair walked all %d rows before it was cut: cannot tell a resume", n)
	}
	walked := -1
	for i := range n {
		if jt := e.journaled("T01", fmt.Sprintf("m-%d", i)); jt.FlowNo == markFlow {
			walked = i + 1
		}
	}
	if walked <= 0 {
		t.Fatalf("mark %q names no sale of the walk", mark)
	}
	t.Logf("cut repair: mark after %d of %d rows", walked, n)
	// Redis loses the records again, under the mark too.
	e.forget(0, n)
	if err := e.l.Repair(e.ctx); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, walked / 2, walked - 1} {
		if e.hasRecord(fmt.Sprintf("m-%d", i)) {
			t.Fatalf("m-%d (under the mark, row %d of %d) was walked again: the repair started over", i, i+1, walked)
		}
	}
	for _, i := range []int{walked, (walked + n) / 2, n - 1} {
		if !e.hasRecord(fmt.Sprintf("m-%d", i)) {
			t.Fatalf("m-%d (after the mark) was not re-applied", i)
		}
	}
	if got := e.reapplyMark(); !strings.HasSuffix(got, ":"+last) {
		t.Fatalf("mark after a complete repair %q, want the last row (%s)", got, last)
	}

	// Degraded rows waiting under the mark lower it before they are applied.
	e.l.SetRedisDown(true)
	d := e.mustSale("T01", "d-0", sale1("A", 1, 100))
	e.l.SetRedisDown(false)
	e.mustSale("T01", "after-d", sale1("A", 1, 100))
	if err := e.l.Repair(e.ctx); err != nil {
		t.Fatal(err)
	}
	if jt := e.journaled("T01", "d-0"); jt == nil || !jt.Applied {
		t.Fatalf("degraded sale %s not applied by the repair", d.FlowNo)
	}
	if got := e.reapplyMark(); !strings.HasSuffix(got, ":"+last) {
		t.Fatalf("mark %q with a degraded row applied after the walk, want it lowered to the row before it (%s)", got, last)
	}
	// That late apply lost (a failover): the next repair walks it again.
	names, _ := e.rdb.Keys(e.ctx, "*idem:T01:d-0").Result()
	e.rdb.Del(e.ctx, names...)
	if err := e.l.Repair(e.ctx); err != nil {
		t.Fatal(err)
	}
	if !e.hasRecord("d-0") {
		t.Fatal("a degraded row applied after the walk and then lost was not re-applied")
	}
}

// scriptCalls is how many scripts Redis has run (EVAL and EVALSHA, from
// INFO commandstats).
func (e *env) scriptCalls() int {
	e.t.Helper()
	info, err := e.rdb.Info(e.ctx, "commandstats").Result()
	if err != nil {
		e.t.Fatalf("INFO commandstats: %v", err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		for _, c := range []string{"cmdstat_eval:", "cmdstat_evalsha:"} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), c); ok {
				var calls int
				if _, err := fmt.Sscanf(rest, "calls=%d", &calls); err != nil {
					e.t.Fatalf("commandstats line %q: %v", line, err)
				}
				n += calls
			}
		}
	}
	return n
}

// TestReapplyAsksRedisBeforeItRunsScripts: a repair's walk over the
// recent window runs the apply script only for the rows whose records
// Redis lacks, having asked for a whole page at once. A failover's new
// master holds nearly every row: one script per row made the repair of a
// busy store's ten minutes take tens of seconds, the tills in degraded
// mode meanwhile (make bench at a quiet machine: not back in normal mode
// within 60 s of a master kill). The rows it lacks are still re-applied.
func TestReapplyAsksRedisBeforeItRunsScripts(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 100, 1_000_000)
	const n = 1200
	for i := range n {
		e.mustSale("T01", fmt.Sprintf("m-%d", i), sale1("A", 1, 100))
	}
	// The whole window walked: no mark to resume from.
	if names, _ := e.rdb.Keys(e.ctx, "*reapplied:*").Result(); len(names) > 0 {
		e.rdb.Del(e.ctx, names...)
	}
	lost := []int{3, 600, n - 1}
	for _, i := range lost {
		e.forget(i, i+1)
	}
	before := e.scriptCalls()
	if err := e.l.Repair(e.ctx); err != nil {
		t.Fatal(err)
	}
	ran := e.scriptCalls() - before
	t.Logf("repair over %d journaled rows, %d lacking: %d scripts run", n, len(lost), ran)
	if ran > len(lost)+20 {
		t.Fatalf("the repair ran %d scripts over %d rows Redis held all but %d of: one per row, not per lacking row", ran, n, len(lost))
	}
	for _, i := range lost {
		if !e.hasRecord(fmt.Sprintf("m-%d", i)) {
			t.Fatalf("m-%d, lacking in Redis, was not re-applied", i)
		}
	}
}
