package health

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

func at(p *time.Time) time.Time {
	if p == nil {
		return time.Time{}
	}
	return *p
}

// The ack bookkeeping the stall rule reads: the first publish after an
// ack starts the wait, later ones do not move it, an ack or a lost link
// ends it.
func TestAwaitingAck(t *testing.T) {
	steps := []struct {
		name         string
		do           func(*Tracker)
		wantAwaiting time.Time
		wantLastAck  time.Time
	}{
		{"nothing yet", func(*Tracker) {}, time.Time{}, time.Time{}},
		{"first publish", func(tr *Tracker) { tr.HQPublished(t0) }, t0, time.Time{}},
		{"second publish keeps the wait", func(tr *Tracker) { tr.HQPublished(t0.Add(5 * time.Second)) }, t0, time.Time{}},
		{"ack ends it", func(tr *Tracker) { tr.HQAcked(t0.Add(6 * time.Second)) }, time.Time{}, t0.Add(6 * time.Second)},
		{"publish again", func(tr *Tracker) { tr.HQPublished(t0.Add(7 * time.Second)) }, t0.Add(7 * time.Second), t0.Add(6 * time.Second)},
		{"link lost ends the wait", func(tr *Tracker) { tr.HQLinkDown() }, time.Time{}, t0.Add(6 * time.Second)},
		{"an older ack does not move last ack back", func(tr *Tracker) { tr.HQAcked(t0) }, time.Time{}, t0.Add(6 * time.Second)},
	}
	tr := New(nil)
	for _, s := range steps {
		s.do(tr)
		got := tr.Snapshot().HQ
		if !at(got.AwaitingAckSince).Equal(s.wantAwaiting) || !at(got.LastAckAt).Equal(s.wantLastAck) {
			t.Fatalf("%s: awaiting %v last ack %v, want %v %v", s.name, got.AwaitingAckSince, got.LastAckAt, s.wantAwaiting, s.wantLastAck)
		}
	}
}

// Each fact carries the time its owner reported it; a Redis never
// probed is not a healthy one.
func TestFactsAreStampedWhenReported(t *testing.T) {
	clock := t0
	tr := New(func() time.Time { return clock })
	if s := tr.Snapshot(); s.Redis.OK || s.Redis.Error != "not probed yet" || !s.Redis.SeenAt.IsZero() {
		t.Fatalf("before any probe: %+v", s.Redis)
	}
	tr.ReportRedis(Redis{OK: true, Master: "127.0.0.1:6379"})
	clock = t0.Add(time.Second)
	tr.ReportJournal(errors.New("disk I/O error"))
	clock = t0.Add(2 * time.Second)
	tr.LedgerMode(true)
	s := tr.Snapshot()
	if !s.Redis.SeenAt.Equal(t0) || !s.Redis.OK {
		t.Fatalf("redis %+v", s.Redis)
	}
	if !s.Journal.SeenAt.Equal(t0.Add(time.Second)) || s.Journal.Error != "disk I/O error" {
		t.Fatalf("journal %+v", s.Journal)
	}
	if !s.Ledger.SeenAt.Equal(t0.Add(2*time.Second)) || !s.Ledger.Degraded {
		t.Fatalf("ledger %+v", s.Ledger)
	}
	seen := t0.Add(-time.Minute)
	tr.ReportRedis(Redis{SeenAt: seen})
	if s := tr.Snapshot(); !s.Redis.SeenAt.Equal(seen) {
		t.Fatalf("a probe's own time was replaced: %v", s.Redis.SeenAt)
	}
}

// The ledger entering degraded mode wakes the prober: Redis is looked at
// now, not at the next tick (2 s later), so the Redis fact catches up
// with the fault the ledger just hit. Leaving degraded mode does not.
func TestDegradedModeWakesTheProber(t *testing.T) {
	tr := New(nil)
	probed := make(chan struct{}, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Watch(ctx, Probes{Redis: func(context.Context) Redis { probed <- struct{}{}; return Redis{OK: false, Error: "refused"} }})
	}()
	tr.LedgerMode(false)
	select {
	case <-probed:
		t.Fatal("leaving degraded mode woke the prober")
	case <-time.After(200 * time.Millisecond):
	}
	start := time.Now()
	tr.LedgerMode(true)
	select {
	case <-probed:
	case <-time.After(ProbeEvery / 2):
		t.Fatalf("no probe %v after the ledger went degraded", time.Since(start))
	}
	for deadline := time.Now().Add(time.Second); tr.Snapshot().Redis.Error != "refused"; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the probe's answer was not reported: %+v", tr.Snapshot().Redis)
		}
	}
	cancel()
	<-done
}

// Reporters and readers on many goroutines (run with -race).
func TestConcurrentReportsAndReads(t *testing.T) {
	tr := New(nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			for n := 0; n < 200; n++ {
				tr.HQPublished(time.Now())
				tr.ReportRedis(Redis{OK: n%2 == 0})
				tr.LedgerMode(n%3 == 0)
				tr.HQAcked(time.Now())
				_ = tr.Snapshot()
			}
		})
	}
	wg.Wait()
	// Every goroutine's last report is an ack, so the last report of all is.
	if s := tr.Snapshot(); s.HQ.AwaitingAckSince != nil || s.HQ.LastAckAt == nil {
		t.Fatalf("snapshot %+v", s)
	}
}
