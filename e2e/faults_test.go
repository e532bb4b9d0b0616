package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

const plenty = 1_000_000

// generous limits: these tests are about durability, not throttling.
const loose = `  store:    {limit: 100000, window: "1s"}
  terminal: {limit: 100000, window: "1s"}
  actions:
    pay:    {limit: 100000, window: "1s"}
    scan:   {limit: 100000, window: "1s"}
`

// kill -9 of the daemon while four terminals sell, then a restart.
func TestDaemonKilledWhileSelling(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: loose})
	s.PutItem("F1", 123, plenty)
	ctx, cancel := context.WithCancel(context.Background())
	tl := runTills(t, ctx, s, 4, "F1", 123)
	time.Sleep(1500 * time.Millisecond)
	s.Edge.Kill()
	time.Sleep(300 * time.Millisecond)
	s.StartEdge()
	time.Sleep(1500 * time.Millisecond)
	cancel()
	checkTold(t, s, tl.wait(), "F1", plenty)
}

// SIGKILL of the Redis master under load: Sentinel promotes a replica;
// sales go on (degraded for the seconds it takes) and nothing repeats.
func TestRedisMasterKilledUnderLoad(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: loose})
	s.PutItem("F2", 77, plenty)
	ctx, cancel := context.WithCancel(context.Background())
	tl := runTills(t, ctx, s, 4, "F2", 77)
	time.Sleep(1500 * time.Millisecond)
	s.Redis.KillNode(s.Redis.MasterIndex())
	testenv.WaitFor(t, 30*time.Second, "a replica promoted", func() bool { return s.Redis.MasterIndex() > 0 })
	time.Sleep(2 * time.Second)
	cancel()
	got := tl.wait()
	checkTold(t, s, got, "F2", plenty)
}

// SIGSTOP of every Redis node: sales continue in degraded mode, status is
// CRIT; after SIGCONT the degraded sales are applied once.
func TestRedisFrozen(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: loose})
	s.PutItem("F3", 5, plenty)
	ctx, cancel := context.WithCancel(context.Background())
	tl := runTills(t, ctx, s, 4, "F3", 5)
	time.Sleep(time.Second)
	s.Redis.StopAll()
	degraded := false
	testenv.WaitFor(t, 15*time.Second, "status crit and degraded", func() bool {
		st := s.Admin("GET", "/admin/v1/status", nil).JSON()
		degraded = st["mode"] == "degraded" && st["status"] == "crit"
		return degraded
	})
	time.Sleep(2 * time.Second)
	if n := s.JournalRows("mode = 'degraded'"); n == 0 {
		t.Fatal("no sale was journaled in degraded mode while Redis was frozen")
	}
	s.Redis.ContAll()
	time.Sleep(2 * time.Second)
	cancel()
	checkTold(t, s, tl.wait(), "F3", plenty)
	if n := s.JournalRows("applied = 0"); n != 0 {
		t.Fatalf("%d degraded sales never applied", n)
	}
}

// Redis answering but refusing writes (maxmemory tiny, noeviction):
// degraded mode, not failed sales; back to normal once it takes writes.
func TestRedisRefusingWrites(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: loose})
	s.PutItem("F4", 9, plenty)
	m := s.Redis.Master()
	ctx, cancel := context.WithCancel(context.Background())
	tl := runTills(t, ctx, s, 2, "F4", 9)
	time.Sleep(time.Second)
	if err := m.ConfigSet(context.Background(), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 15*time.Second, "degraded sales", func() bool { return s.JournalRows("mode = 'degraded'") > 5 })
	if err := m.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	cancel()
	checkTold(t, s, tl.wait(), "F4", plenty)
}
