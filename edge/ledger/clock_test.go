package ledger_test

import (
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// A jump of the daemon's clock (NTP stepping it, a VM resumed, a wrong
// RTC at boot) must not change whether another owner's PROCESSING record
// is in flight or abandoned: forward, a script in flight would be
// journaled as recovered beside its owner (two journals with the sale);
// back, a crash's record would answer 409 request_in_progress for the
// whole jump. The record is judged against Redis's clock (docs/
// durability.md, "Clock jumps").
func TestClockJumpDoesNotChangeInFlightVerdict(t *testing.T) {
	for _, tc := range []struct {
		name       string
		jump       time.Duration // of the daemon's clock
		recordAge  time.Duration // of the other owner's record, in real time
		inProgress bool
	}{
		{"forward 1h, script in flight", time.Hour, 100 * time.Millisecond, true},
		{"back 1h, script in flight", -time.Hour, 100 * time.Millisecond, true},
		{"back 1h, record of a crash", -time.Hour, 10 * time.Second, false},
		{"forward 1h, record of a crash", time.Hour, 10 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var jump atomic.Int64
			e := &env{t: t, ctx: t.Context(), now: func() time.Time { return time.Now().Add(time.Duration(jump.Load())) }}
			e.redis = testenv.StartRedisSingle(t)
			e.rdb = e.redis.NodeClient(0)
			e.jPath = filepath.Join(t.TempDir(), "lost.db") // the other owner's journal
			e.open()
			e.putItem("A", 150, 100)
			e.mustSale("T01", "k", sale1("A", 1, 150))
			e.waitCompleted("T01:k")
			names, err := e.rdb.Keys(e.ctx, "*idem:T01:k").Result()
			if err != nil || len(names) != 1 {
				t.Fatalf("record: %v %v", names, err)
			}
			at := time.Now().Add(-tc.recordAge).UnixMilli()
			if err := e.rdb.HSet(e.ctx, names[0], "state", "PROCESSING", "owner", "other", "at", strconv.FormatInt(at, 10)).Err(); err != nil {
				t.Fatal(err)
			}
			e.jPath = filepath.Join(t.TempDir(), "journal.db")
			e.restart(journal.Options{})
			jump.Store(int64(tc.jump))
			r, err := e.sale("T01", "k", sale1("A", 1, 150))
			if tc.inProgress {
				if err == nil || refusal(t, err).Code != "request_in_progress" {
					t.Fatalf("a script in flight, clock jumped %v: got a sale (replayed %v), %v; want request_in_progress", tc.jump, r != nil && r.Replayed, err)
				}
				if e.journaled("T01", "k") != nil {
					t.Fatal("a script in flight was journaled as recovered")
				}
				return
			}
			if err != nil || !r.Replayed {
				t.Fatalf("a crash's record, clock jumped %v: got %v; want the stored sale replayed", tc.jump, err)
			}
			if jt := e.journaled("T01", "k"); jt == nil || jt.Mode != journal.ModeRecovered {
				t.Fatalf("journal row: %+v, want mode recovered", jt)
			}
			if got := e.stock("A"); got != 99 {
				t.Fatalf("stock %d, want 99 (the sale once)", got)
			}
		})
	}
}
