package health

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/status"
)

var t0 = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

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
		got := tr.Snapshot()
		if !got.AwaitingAckSince.Equal(s.wantAwaiting) || !got.LastAckAt.Equal(s.wantLastAck) {
			t.Fatalf("%s: awaiting %v last ack %v, want %v %v", s.name, got.AwaitingAckSince, got.LastAckAt, s.wantAwaiting, s.wantLastAck)
		}
	}
}

// What was reported is what status judges: a hung HQ reported by the
// replay turns the report WARN with hq.stalled, a Redis never probed is
// not taken for a healthy one.
func TestFactsFromReports(t *testing.T) {
	tr := New(func() time.Time { return t0 })
	now := t0.Add(time.Minute)
	th := status.Thresholds{BacklogCritAge: time.Hour, RedisTimeout: 300 * time.Millisecond}

	f := tr.Snapshot().Facts(now)
	if f.Redis.OK || f.Redis.Error != "not probed yet" || !f.DaemonUp {
		t.Fatalf("before any probe: %+v", f.Redis)
	}

	tr.SetRedis(Redis{Reachable: true, Master: "127.0.0.1:6379", Replicas: 2, WantReplicas: 2, Sentinels: 3, SentinelsAll: 3,
		Latency: time.Millisecond})
	tr.SetHQLink(HQLink{Connected: true, LastError: "nats: timeout"})
	tr.SetLedger(false)
	tr.SetLimiter(true, now.Add(42*time.Second), 7)
	tr.SetJournal(nil)
	tr.HQAcked(t0)
	tr.HQPublished(t0.Add(20 * time.Second))
	f = tr.Snapshot().Facts(now)
	f.HQ.Backlog = 12
	r := status.Evaluate(f, th)
	if r.Status != status.Warn || !r.HQ.Stalled || r.Redis.Master != "127.0.0.1:6379" || f.LimiterDenied != 7 {
		t.Fatalf("report %+v", r)
	}
	if !f.FallbackActive || !f.FallbackHeldUntil.Equal(now.Add(42*time.Second)) {
		t.Fatalf("limiter facts: active %v, held until %v", f.FallbackActive, f.FallbackHeldUntil)
	}
	if s := tr.Snapshot(); !s.Journal.Usable || !s.Redis.CheckedAt.Equal(t0) {
		t.Fatalf("snapshot %+v", s)
	}
	tr.SetJournal(errors.New("disk I/O error"))
	if s := tr.Snapshot(); s.Journal.Usable || s.Journal.Error != "disk I/O error" {
		t.Fatalf("journal %+v", s.Journal)
	}
}

// Reporters and readers on many goroutines (run with -race).
func TestConcurrentReportsAndReads(t *testing.T) {
	tr := New(nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			for n := 0; n < 200; n++ {
				tr.HQPublished(time.Now())
				tr.SetRedis(Redis{Reachable: n%2 == 0})
				tr.HQAcked(time.Now())
				_ = tr.Snapshot().Facts(time.Now())
			}
		})
	}
	wg.Wait()
	// Every goroutine's last report is an ack, so the last report of all is.
	if s := tr.Snapshot(); !s.AwaitingAckSince.IsZero() || s.LastAckAt.IsZero() {
		t.Fatalf("snapshot %+v", s)
	}
}
