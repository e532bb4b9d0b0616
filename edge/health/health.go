package health

import (
	"errors"
	"sync"
	"time"

	"github.com/posedge/posedge/offline/journal"
)

// Tracker holds the latest fact of each subsystem. Its methods may be
// called from any goroutine; the zero value is not usable, use New.
type Tracker struct {
	now func() time.Time
	// reprobe wakes the prober when a reporter saw Redis fail, so the
	// Redis fact is not left at what the probe before the fault saw.
	reprobe chan struct{}

	mu      sync.Mutex
	redis   Redis
	journal Journal
	ledger  Ledger
	// The replay's ack bookkeeping (the stall rule reads it).
	lastAckAt, awaitingAckSince time.Time
}

// Snapshot is a copy of every fact reported, safe to keep. HQ holds the
// ack bookkeeping only: the link's own state is the replay's, read from
// it when asked.
type Snapshot struct {
	Redis   Redis
	Journal Journal
	Ledger  Ledger
	HQ      HQ
}

// New returns a Tracker with nothing reported; now is the clock (nil =
// time.Now). Until the first probe Redis reads "not probed yet", never
// a healthy Redis.
func New(now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	return &Tracker{now: now, reprobe: make(chan struct{}, 1), redis: Redis{Error: "not probed yet"}}
}

// ReportRedis reports what a probe of Redis saw (SeenAt zero: now).
func (t *Tracker) ReportRedis(r Redis) {
	if r.SeenAt.IsZero() {
		r.SeenAt = t.now()
	}
	t.mu.Lock()
	t.redis = r
	t.mu.Unlock()
}

// ReportJournal reports whether the journal answered, err nil when it
// did; an error wrapping journal.ErrDamaged (the background quick_check's
// finding) marks it damaged.
func (t *Tracker) ReportJournal(err error) {
	j := Journal{SeenAt: t.now()}
	if err != nil {
		j.Error, j.Damaged = err.Error(), errors.Is(err, journal.ErrDamaged)
	}
	t.mu.Lock()
	t.journal = j
	t.mu.Unlock()
}

// LedgerMode is the ledger's report of a change of mode, made as it
// switches (edge/ledger.HealthReporter). Entering degraded mode means a
// Redis call just failed: the prober is woken to look at Redis now.
func (t *Tracker) LedgerMode(degraded bool) {
	t.mu.Lock()
	t.ledger = Ledger{SeenAt: t.now(), Degraded: degraded}
	t.mu.Unlock()
	if degraded {
		select {
		case t.reprobe <- struct{}{}:
		default: // a probe is already due
		}
	}
}

// Reprobe is signalled when a reporter saw Redis fail: the prober looks
// again at once instead of at its next tick.
func (t *Tracker) Reprobe() <-chan struct{} { return t.reprobe }

// HQPublished reports a batch handed to the link: its acks are awaited.
func (t *Tracker) HQPublished(at time.Time) {
	t.mu.Lock()
	if t.awaitingAckSince.IsZero() {
		t.awaitingAckSince = at
	}
	t.mu.Unlock()
}

// HQAcked reports publishes acknowledged by HQ, or an outbox found empty:
// nothing awaits an ack any more.
func (t *Tracker) HQAcked(at time.Time) {
	t.mu.Lock()
	if at.After(t.lastAckAt) {
		t.lastAckAt = at
	}
	t.awaitingAckSince = time.Time{}
	t.mu.Unlock()
}

// HQLinkDown reports the link lost: what awaited an ack is resent on the
// next connection, whose wait starts afresh.
func (t *Tracker) HQLinkDown() {
	t.mu.Lock()
	t.awaitingAckSince = time.Time{}
	t.mu.Unlock()
}

// Snapshot is a copy of the latest facts.
func (t *Tracker) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Snapshot{Redis: t.redis, Journal: t.journal, Ledger: t.ledger}
	if !t.lastAckAt.IsZero() {
		at := t.lastAckAt
		s.HQ.LastAckAt = &at
	}
	if !t.awaitingAckSince.IsZero() {
		at := t.awaitingAckSince
		s.HQ.AwaitingAckSince = &at
	}
	return s
}
