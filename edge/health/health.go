package health

import (
	"sync"
	"time"

	"github.com/posedge/posedge/edge/status"
)

// Redis is what the last probe of the Sentinels and the master saw.
type Redis struct {
	CheckedAt     time.Time // zero: not probed yet
	Reachable     bool      // the master answers and takes writes
	Master        string
	Replicas      int // online replicas of the master
	WantReplicas  int // redis.replicas
	MaxLagSeconds int64
	// DownReplicas are the replicas the Sentinels know but see down or
	// disconnected (host:port), so a technician knows which one to look at.
	DownReplicas []string
	Sentinels    int // sentinels that answered
	SentinelsAll int // sentinels configured
	UsedMemory   int64
	MaxMemory    int64
	ClockSkew    time.Duration
	// Latency is the fastest call of the probe: when even that one is
	// slow, every call is.
	Latency time.Duration
	Error   string
}

// Journal is whether the journal answered the last time it was read.
type Journal struct {
	CheckedAt time.Time
	Usable    bool
	Error     string
}

// HQLink is the replay's view of the link to HQ.
type HQLink struct {
	Connected  bool
	LastSyncAt *time.Time
	LastError  string
	RatePerSec float64
	// HQAnsweredAt is the last time posedge-hq answered a have query
	// (delivery confirmation); nil before the first.
	HQAnsweredAt *time.Time
}

// Snapshot is a copy of everything reported, safe to keep.
type Snapshot struct {
	Redis    Redis
	Journal  Journal
	HQ       HQLink
	Degraded bool // the ledger serves from the journal only
	// Fallback: the rate limiter counts locally (Redis unreachable).
	Fallback bool
	// FallbackHeldUntil: Redis answers again and the fallback is held,
	// on purpose, until then; zero otherwise.
	FallbackHeldUntil time.Time
	LimiterDenied     int64
	// LastAckAt is when HQ last acknowledged a publish (or the outbox was
	// found empty); AwaitingAckSince is when the first publish since then
	// went out, zero while none awaits an ack.
	LastAckAt        time.Time
	AwaitingAckSince time.Time
}

// Tracker holds the latest reports. Its methods may be called from any
// goroutine; the zero value is not usable, use New.
type Tracker struct {
	now func() time.Time

	mu sync.Mutex
	s  Snapshot
}

// New returns an empty Tracker; now is the clock (nil = time.Now).
func New(now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	return &Tracker{now: now}
}

// SetRedis reports a probe of Redis.
func (t *Tracker) SetRedis(r Redis) {
	if r.CheckedAt.IsZero() {
		r.CheckedAt = t.now()
	}
	t.mu.Lock()
	t.s.Redis = r
	t.mu.Unlock()
}

// SetJournal reports whether the journal could be read, err nil when it could.
func (t *Tracker) SetJournal(err error) {
	j := Journal{CheckedAt: t.now(), Usable: err == nil}
	if err != nil {
		j.Error = err.Error()
	}
	t.mu.Lock()
	t.s.Journal = j
	t.mu.Unlock()
}

// SetHQLink reports the replay's connection state.
func (t *Tracker) SetHQLink(l HQLink) {
	t.mu.Lock()
	t.s.HQ = l
	t.mu.Unlock()
}

// SetLedger reports the ledger's mode.
func (t *Tracker) SetLedger(degraded bool) {
	t.mu.Lock()
	t.s.Degraded = degraded
	t.mu.Unlock()
}

// SetLimiter reports the rate limiter's state; heldUntil is the end of the
// fallback's hold after Redis returned (zero when not held).
func (t *Tracker) SetLimiter(fallback bool, heldUntil time.Time, denied int64) {
	t.mu.Lock()
	t.s.Fallback, t.s.FallbackHeldUntil, t.s.LimiterDenied = fallback, heldUntil, denied
	t.mu.Unlock()
}

// HQPublished reports a batch handed to the link: its acks are awaited.
func (t *Tracker) HQPublished(at time.Time) {
	t.mu.Lock()
	if t.s.AwaitingAckSince.IsZero() {
		t.s.AwaitingAckSince = at
	}
	t.mu.Unlock()
}

// HQAcked reports publishes acknowledged by HQ, or an outbox found empty:
// nothing awaits an ack any more.
func (t *Tracker) HQAcked(at time.Time) {
	t.mu.Lock()
	if at.After(t.s.LastAckAt) {
		t.s.LastAckAt = at
	}
	t.s.AwaitingAckSince = time.Time{}
	t.mu.Unlock()
}

// HQLinkDown reports the link lost: what awaited an ack is resent on the
// next connection, whose wait starts afresh.
func (t *Tracker) HQLinkDown() {
	t.mu.Lock()
	t.s.AwaitingAckSince = time.Time{}
	t.mu.Unlock()
}

// Snapshot is a copy of the latest reports.
func (t *Tracker) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s
}

// Facts are the snapshot as edge/status judges it: the Redis, HQ link,
// mode and limiter parts. The caller adds who the daemon is, the journal's
// figures and the backlog.
func (s Snapshot) Facts(now time.Time) status.Facts {
	f := status.Facts{Now: now, DaemonUp: true, Degraded: s.Degraded, FallbackActive: s.Fallback,
		FallbackHeldUntil: s.FallbackHeldUntil, LimiterDenied: s.LimiterDenied}
	r := s.Redis
	f.Redis = status.RedisFacts{OK: r.Reachable, Master: r.Master, Replicas: r.Replicas, WantReplicas: r.WantReplicas,
		SentinelsAll: r.SentinelsAll, Error: r.Error,
		UsedMemory: r.UsedMemory, MaxMemory: r.MaxMemory, Sentinels: r.Sentinels, ClockSkew: r.ClockSkew,
		MaxLagSeconds: r.MaxLagSeconds, Latency: r.Latency, DownReplicas: r.DownReplicas}
	if r.CheckedAt.IsZero() {
		f.Redis.Error = "not probed yet"
	}
	f.HQ = status.HQFacts{Connected: s.HQ.Connected, LastSyncAt: s.HQ.LastSyncAt, LastError: s.HQ.LastError,
		RatePerSec: s.HQ.RatePerSec, HQAnsweredAt: s.HQ.HQAnsweredAt}
	if !s.LastAckAt.IsZero() {
		at := s.LastAckAt
		f.HQ.LastAckAt = &at
	}
	if !s.AwaitingAckSince.IsZero() {
		at := s.AwaitingAckSince
		f.HQ.AwaitingAckSince = &at
	}
	return f
}
