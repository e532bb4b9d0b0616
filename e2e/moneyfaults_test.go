package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/internal/testenv"
)

// TestTwoDaemonsOneRedisThroughMasterKillAndFreeze: two daemons of one
// store (node_id 0 and 1) share its Redis while tills on each sell the
// realistic mix; the Redis master is killed (Sentinel promotes a
// replica), later every Redis node is frozen (SIGSTOP, both daemons go
// degraded and number flows from their own node's range) and thawed.
// Every flow number told is unique across both daemons, each is in one
// journal once and at HQ once with no conflict, and Redis's stock and
// counters are exactly the sum of both daemons' answers.
func TestTwoDaemonsOneRedisThroughMasterKillAndFreeze(t *testing.T) {
	seed := testSeed(t)
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	putMixItems(s)
	tw := s.StartTwin(1)
	ctx, cancel := context.WithCancel(context.Background())
	a := runMix(t, ctx, s, 2, "node0", seed)
	b := runMix(t, ctx, tw, 2, "node1", seed+1)
	time.Sleep(1500 * time.Millisecond)

	s.Redis.KillNode(s.Redis.MasterIndex())
	testenv.WaitFor(t, 30*time.Second, "a replica promoted", func() bool { return s.Redis.MasterIndex() > 0 })
	time.Sleep(2 * time.Second)

	s.Redis.StopAll()
	for _, d := range []*testenv.Store{s, tw} {
		testenv.WaitForState(t, 15*time.Second, "both daemons degraded", func() (bool, string) {
			st := d.Admin("GET", "/admin/v1/status", nil).JSON()
			return st["mode"] == "degraded", fmt.Sprintf("%s mode %v", d.Edge.Name, st["mode"])
		})
	}
	time.Sleep(2 * time.Second)
	for _, d := range []*testenv.Store{s, tw} {
		if n := d.JournalRows("mode = 'degraded'"); n == 0 {
			t.Fatalf("%s journaled nothing in degraded mode while Redis was frozen", d.Edge.Name)
		}
	}
	s.Redis.ContAll()
	time.Sleep(2 * time.Second)
	cancel()
	got := append(a.wait(), b.wait()...)
	t.Logf("node 0: %s; node 1: %s", a.summary(), b.summary())
	auditMix(t, s, got, filepath.Join(s.Dir, "journal.db"), filepath.Join(tw.Dir, "journal.db"))
}

// TestTwoDaemonsOneRedisThroughRestarts: two daemons share the store's
// Redis (node_id 0 and 1) and both sell the realistic mix. Three times,
// node 0 is frozen (SIGSTOP) while a sale of its own is between its Redis
// script and its journal commit (its record PROCESSING in Redis, read
// directly; every Redis answer is held killWindow so that this is often
// so), and node 1 is killed (-9) and started again meanwhile; then node 0
// goes on (SIGCONT) and journals its sale. Each sale told is in exactly
// one journal and at HQ once (auditMix over both journals): node 1's
// start-up scan leaves node 0's records to node 0. Until 2026-12-07 it
// journaled them too ("recovered"), and such a sale stood in both
// journals.
func TestTwoDaemonsOneRedisThroughRestarts(t *testing.T) {
	seed := testSeed(t)
	s := startStore(t, testenv.StoreOptions{Limits: looseMix, RedisProxy: true})
	putMixItems(s)
	tw := s.StartTwin(1)
	ctx, cancel := context.WithCancel(context.Background())
	a := runMix(t, ctx, s, 2, "node0", seed)
	b := runMix(t, ctx, tw, 2, "node1", seed+1)
	s.RedisProxy.Set(testenv.DelayAnswers, killWindow)
	rdb := s.Redis.NodeClient(s.Redis.MasterIndex())
	for round := range 3 {
		time.Sleep(300 * time.Millisecond)
		var caught string
		testenv.WaitFor(t, 30*time.Second, "node 0 frozen with a sale of its own in flight", func() bool {
			s.Edge.Signal(syscall.SIGSTOP)
			if caught = processingRecord(t, rdb, "node0-"); caught != "" {
				return true
			}
			s.Edge.Signal(syscall.SIGCONT)
			time.Sleep(time.Duration(10+round*7) * time.Millisecond)
			return false
		})
		tw.Edge.Kill()
		tw.StartEdge()
		s.Edge.Signal(syscall.SIGCONT)
		t.Logf("round %d: node 1 restarted while node 0, frozen, had %s in flight", round+1, caught)
	}
	time.Sleep(500 * time.Millisecond)
	s.RedisProxy.Set(testenv.Pass, 0)
	cancel()
	got := append(a.wait(), b.wait()...)
	t.Logf("node 0: %s; node 1: %s", a.summary(), b.summary())
	auditMix(t, s, got, filepath.Join(s.Dir, "journal.db"), filepath.Join(tw.Dir, "journal.db"))
}

// processingRecord is the name of an idempotency record in state
// PROCESSING whose key begins with keyPrefix, or "".
func processingRecord(t *testing.T, rdb *redis.Client, keyPrefix string) string {
	t.Helper()
	names, err := rdb.Keys(context.Background(), "*:idem:*:"+keyPrefix+"*").Result()
	if err != nil {
		t.Fatalf("list idempotency records: %v", err)
	}
	for _, n := range names {
		if st, _ := rdb.HGet(context.Background(), n, "state").Result(); st == "PROCESSING" {
			return n
		}
	}
	return ""
}

// TestDegradedRefundsAppliedOnce: sales made while Redis is up are
// refunded while it is frozen (degraded mode: the refunds are journaled
// unapplied); Redis is thawed and the daemon is killed (-9) while it
// applies them, then restarted. Each refund restores its stock and counts
// once: not lost with the crash, not applied twice after it.
func TestDegradedRefundsAppliedOnce(t *testing.T) {
	seed := testSeed(t)
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	putMixItems(s)
	ctx, cancel := context.WithCancel(context.Background())
	mt := runMix(t, ctx, s, 4, "before", seed)
	time.Sleep(2 * time.Second)
	cancel()
	sales := mt.wait()

	s.Redis.StopAll()
	testenv.WaitForState(t, 15*time.Second, "degraded mode", func() (bool, string) {
		st := s.Admin("GET", "/admin/v1/status", nil).JSON()
		return st["mode"] == "degraded", fmt.Sprintf("mode %v", st["mode"])
	})
	done := map[string]bool{} // sales the mix refunded already
	for _, tx := range sales {
		done[tx.OriginalFlowNo] = true
	}
	refunded := &mixTills{count: map[string]int{}}
	for i, sale := range sales {
		if sale.Kind != "sale" || done[sale.FlowNo] || len(refunded.told) >= 60 {
			continue
		}
		// Any terminal may refund any sale of the store.
		m := &mixTill{t: t, s: s, term: s.Terminals[i%len(s.Terminals)], mt: refunded}
		if !m.refundOf(fmt.Sprintf("degraded-refund-%d", i), sale) {
			t.FailNow()
		}
	}
	refunds := refunded.snapshot()
	t.Logf("%d sales, then %d refunds of them while Redis was frozen", len(sales), len(refunds))
	if n := s.JournalRows("kind = 'refund' AND mode = 'degraded' AND applied = 0"); n < len(refunds) {
		t.Fatalf("%d unapplied degraded refunds in the journal, %d refunded while Redis was frozen", n, len(refunds))
	}
	s.Redis.ContAll()
	testenv.WaitFor(t, 30*time.Second, "some degraded refunds applied", func() bool {
		return s.JournalRows("kind = 'refund' AND applied = 1") > 0
	})
	s.Edge.Kill() // in the middle of applying them, or just after
	s.StartEdge()
	all := append(sales, refunds...)
	auditMix(t, s, all)
	testenv.WaitForState(t, 30*time.Second, "every degraded refund applied", func() (bool, string) {
		n := s.JournalRows("applied = 0")
		return n == 0, fmt.Sprintf("%d not applied", n)
	})
}
