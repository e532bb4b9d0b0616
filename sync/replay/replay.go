package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/internal/natsurl"
	"github.com/posedge/posedge/internal/secret"
	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/hqlink"
	"github.com/posedge/posedge/sync/wire"
)

// Limiter charges the store-wide `sync` policy: one hit per batch, shared
// by every daemon of the store (edge/ratelimit's Limiter implements it).
type Limiter interface {
	WaitStoreSync(ctx context.Context) error
}

// Defaults of the zero fields of a Config.
const (
	DefaultBatchSize      = 500
	DefaultBatchBytes     = 4 << 20
	DefaultAckTimeout     = 10 * time.Second
	DefaultIdle           = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultHaveTimeout    = 2 * time.Second
	DefaultHeartbeatEvery = time.Minute
	// DefaultConfirmAfter is hq.confirm_after: how long after JetStream's
	// ack the store asks HQ whether it stored a row.
	DefaultConfirmAfter = 30 * time.Second
	// DefaultStartJitter is what the daemon passes as StartJitter: stores
	// restarted together (power cut, rollout) connect spread over it.
	DefaultStartJitter = 2 * time.Second
)

// statsEvery is how often backlog figures are read for metrics and Status.
const statsEvery = 10 * time.Second

// Config of a Replayer. The TLS and credentials files are used when set.
type Config struct {
	StoreID       string
	NATSURL       string
	CredsFile     string // NATS user credentials (JWT + seed)
	CAFile        string // CA bundle checking HQ's server certificate
	CertFile      string // client certificate for mutual TLS, with KeyFile
	KeyFile       string
	SubjectPrefix string        // default wire.DefaultSubjectPrefix
	BatchSize     int           // rows per batch, default 500
	BatchBytes    int           // body bytes per batch (at least one row), default 4 MiB
	AckTimeout    time.Duration // wait for a batch's acks, default 10s
	Idle          time.Duration // poll interval when the outbox is empty, default 500ms
	Version       string        // daemon version, sent in heartbeats

	// StartJitter bounds a random delay before the first connection, so
	// stores restarting together do not all reconnect at once; 0 = none.
	StartJitter time.Duration
	// MaxBackoff caps the jittered exponential backoff of reconnects and
	// of batch retries; default 30s.
	MaxBackoff time.Duration
	// HaveTimeout bounds the "what does HQ hold" request; default 2s.
	HaveTimeout time.Duration
	// Pace is the least time between two batches that are not full: a
	// trickle of sales then waits to share one hit of the sync budget
	// instead of spending it batch by batch (a full batch goes at once).
	// The daemon sets it to window / (limit × fallback fraction) of the
	// sync policy; 0 = no pacing.
	Pace time.Duration
	// HeartbeatEvery is the heartbeat period; default 1m.
	HeartbeatEvery time.Duration
	// AuditEvery is how often the store asks HQ again about the rows it
	// had confirmed of the last AuditDays business days, and resends
	// those HQ no longer holds (its database restored from an older
	// backup, rows deleted): incomplete days repair themselves. Also
	// after each day's manifest. AuditAllEvery is how often the audit
	// covers every day the journal still holds (journal.retention)
	// instead: the older days are asked about less often, as each pass
	// over months of rows loads HQ's database. A pass asks a slice per
	// confirmation round. Defaults 1h, 7 days and 24h.
	AuditEvery    time.Duration
	AuditDays     int
	AuditAllEvery time.Duration
	// ConfirmAfter is hq.confirm_after: rows JetStream acknowledged this
	// long ago are asked about (the have query); those HQ lacks are
	// published again from the journal. Default 30s.
	ConfirmAfter time.Duration
	// JournalRetention is journal.retention, said in the heartbeat so
	// that posedge-hq knows how far back this store's audit can repair a
	// day (wire.Heartbeat.JournalRetentionDays); 0: not said.
	JournalRetention time.Duration
	// HeartbeatState, when set, gives the daemon's mode and status level
	// for the heartbeat.
	HeartbeatState func() (mode, level string)
	// TestClockSkew shifts the clock the heartbeat reports (sent_at and
	// store_clock). Test-only: it exists so that a test can show HQ's
	// clock offset estimate; never set it in production.
	TestClockSkew time.Duration
	// Location is the store's time zone, in which business days change
	// (and the day's manifest is published); default time.Local.
	Location *time.Location
	// Health learns when publishes go out and are acknowledged, so a
	// link that is up but hung is seen (edge/health.Tracker); may be nil.
	Health HealthReporter
}

// HealthReporter is told how the link to HQ does as it happens.
type HealthReporter interface {
	HQPublished(at time.Time) // a batch went out; its acks are awaited
	HQAcked(at time.Time)     // HQ acknowledged publishes, or nothing was left to send
	HQLinkDown()              // the connection is lost; what awaited an ack is resent later
}

func (c *Config) defaults() {
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = wire.DefaultSubjectPrefix
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchBytes <= 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.AckTimeout <= 0 {
		c.AckTimeout = DefaultAckTimeout
	}
	if c.Idle <= 0 {
		c.Idle = DefaultIdle
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.HaveTimeout <= 0 {
		c.HaveTimeout = DefaultHaveTimeout
	}
	if c.HeartbeatEvery <= 0 {
		c.HeartbeatEvery = DefaultHeartbeatEvery
	}
	if c.ConfirmAfter <= 0 {
		c.ConfirmAfter = DefaultConfirmAfter
	}
	if c.AuditEvery <= 0 {
		c.AuditEvery = time.Hour
	}
	if c.AuditDays <= 0 {
		c.AuditDays = 7
	}
	if c.AuditAllEvery <= 0 {
		c.AuditAllEvery = 24 * time.Hour
	}
	if c.Location == nil {
		c.Location = time.Local
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.StoreID == "" {
		errs = append(errs, errors.New("store_id: required"))
	}
	if err := natsurl.Check(c.NATSURL); err != nil {
		errs = append(errs, fmt.Errorf("hq.nats_url: %w", err))
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		errs = append(errs, errors.New("hq.cert_file and hq.key_file go together: give both or neither"))
	}
	for _, f := range []struct{ key, path string }{{"hq.creds_file", c.CredsFile}, {"hq.ca_file", c.CAFile},
		{"hq.cert_file", c.CertFile}, {"hq.key_file", c.KeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.key, err))
		}
	}
	return errors.Join(errs...)
}

// Status is the replay's state for /admin/v1/status and `posedge status`.
type Status struct {
	Connected bool   `json:"connected"`
	Server    string `json:"server,omitempty"`
	// LastSyncAt is the last time the replay was up to date or had a
	// batch acknowledged.
	LastSyncAt *time.Time `json:"last_sync_at,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
	RatePerSec float64    `json:"rate_per_sec"` // rows acked per second over the last minute
	Sent       uint64     `json:"sent"`         // publishes since start, resends included
	Acked      uint64     `json:"acked"`        // rows marked synced since start
	Confirmed  uint64     `json:"confirmed"`    // of which HQ said it already held them
	// HQConfirmed counts rows HQ confirmed storing since start (the
	// delivery confirmation, Confirmed included); Resent those HQ lacked
	// after JetStream's ack, put back in the outbox.
	HQConfirmed uint64 `json:"hq_confirmed"`
	Resent      uint64 `json:"resent"`
	// HQAnsweredAt is the last time posedge-hq answered a have query.
	HQAnsweredAt *time.Time `json:"hq_answered_at,omitempty"`
	// Figures of the journal, read every few seconds.
	Backlog      int64      `json:"backlog"`
	BacklogBytes int64      `json:"backlog_bytes"`
	OldestUnsent *time.Time `json:"oldest_unsent_at,omitempty"`
	Quarantined  int64      `json:"quarantined"`
	// Unconfirmed: rows JetStream acknowledged that HQ has not confirmed
	// storing; OldestUnconfirmedAck the earliest ack among them.
	Unconfirmed          int64      `json:"unconfirmed"`
	OldestUnconfirmedAck *time.Time `json:"oldest_unconfirmed_ack_at,omitempty"`
}

// Replayer drains the journal's outbox to HQ. Run it once; Kick and
// Status may be called from any goroutine.
type Replayer struct {
	cfg Config
	j   *journal.Journal
	lim Limiter
	log *slog.Logger
	m   *metrics

	subject string
	wake    chan struct{} // Kick and reconnects: look at the outbox now
	running atomic.Bool
	nc      atomic.Pointer[link] // the current connection, nil between connections
	link    *hqlink.Link         // the same connection, for the catalog watch

	rmu sync.Mutex // reconnect backoff, used by the NATS client's reconnect goroutine
	rb  *backoff.ExponentialBackOff

	// Used by the Run goroutine only: the pipeline of batches (see batch).
	inflight  *flight         // published, acks awaited
	recording *recording      // the journal's writes of the last landed batch
	floor     int64           // the outbox is read past this rowid: rows of batches not yet recorded
	ahead     chan aheadBatch // the next batch, read (and checked) while the one before is on its way
	checked   map[int64]error // by rowid: the checks of the batch taken from ahead
	landed    bool            // a batch landed with every row acked since the replay loop last looked

	mu        sync.Mutex
	st        Status
	startedAt time.Time
	rate      rateWindow
	manifests map[string]bool // days whose manifest could not be published yet
	auditNow  atomic.Bool     // a manifest went out: ask HQ about the confirmed rows again
	day       string          // business day seen at the last heartbeat
}

// New checks cfg and prepares a Replayer; nothing connects before Run.
// lim may be nil (no throttle, for tools and benchmarks); reg may be nil.
func New(cfg Config, j *journal.Journal, lim Limiter, log *slog.Logger, reg prometheus.Registerer) (*Replayer, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("replay config: %w", err)
	}
	if j == nil {
		return nil, errors.New("replay: no journal")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Replayer{
		cfg: cfg, j: j, lim: lim, log: log.With("component", "replay", "store_id", cfg.StoreID), m: m,
		subject:   wire.TxnSubject(cfg.SubjectPrefix, cfg.StoreID),
		wake:      make(chan struct{}, 1),
		link:      hqlink.New(),
		manifests: map[string]bool{},
	}, nil
}

// Link is the replay's connection to HQ, shared with the store's other
// users of HQ (the catalog watch): one connection, one set of options.
func (r *Replayer) Link() *hqlink.Link { return r.link }

// Kick makes the replay look at the outbox at once ("posedge sync now"):
// it cuts short the idle poll, a retry backoff and, while HQ is
// unreachable, the wait before the next reconnect attempt. The sync
// policy is still charged.
func (r *Replayer) Kick() {
	r.signal()
	if l := r.nc.Load(); l != nil && l.nc.IsReconnecting() {
		_ = l.nc.ForceReconnect() // only errors on a closed connection, replaced by Run
	}
}

func (r *Replayer) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Status is a snapshot of the replay's state.
func (r *Replayer) Status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.st
	s.RatePerSec = r.rate.perSec(time.Now(), r.startedAt)
	if l := r.nc.Load(); l != nil {
		s.Connected = l.nc.IsConnected()
		if s.Connected {
			s.Server = l.nc.ConnectedUrlRedacted()
		}
	} else {
		s.Connected = false
	}
	return s
}

// Run replays until ctx ends, then returns nil. WAN and HQ failures are
// retried for ever with a jittered backoff; they are logged and shown in
// Status, never returned.
func (r *Replayer) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("replay: Run is already running")
	}
	defer r.running.Store(false)
	r.mu.Lock()
	r.startedAt = time.Now()
	r.day = businessday.Of(time.Now(), r.cfg.Location)
	r.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.background(ctx) }()
	go func() { defer wg.Done(); r.confirmLoop(ctx) }()
	defer wg.Wait()

	if r.cfg.StartJitter > 0 {
		d := rand.N(r.cfg.StartJitter)
		r.log.Debug("jittered start", "delay", d)
		if !sleep(ctx, d, nil) {
			return nil
		}
	}
	for ctx.Err() == nil {
		l, err := r.connect(ctx)
		if err != nil {
			break // ctx ended
		}
		r.replay(ctx, l)
		r.nc.Store(nil)
		r.link.Set(nil)
		l.nc.Close()
		r.m.connected.Set(0)
	}
	return nil
}

// replay runs batches on one connection until ctx ends or the connection
// is closed for good.
func (r *Replayer) replay(ctx context.Context, l *link) {
	defer func() {
		if err := errors.Join(r.land(ctx), r.settle()); err != nil && ctx.Err() == nil {
			r.setError(err)
			r.log.Warn("record the last batches", "err", err)
		}
		r.dropAhead()
		r.floor = 0
	}()
	retry := r.newBackoff()
	for ctx.Err() == nil {
		if l.nc.IsClosed() {
			r.log.Warn("NATS connection closed; connecting again", "err", l.nc.LastError())
			return
		}
		if !l.nc.IsConnected() {
			// The client reconnects on its own; a reconnect or Kick wakes
			// us. What was on its way lands first (its acks time out).
			if err := errors.Join(r.land(ctx), r.settle()); err != nil && ctx.Err() == nil {
				r.setError(err)
			}
			if r.cfg.Health != nil {
				r.cfg.Health.HQLinkDown()
			}
			sleep(ctx, r.cfg.Idle, r.wake)
			continue
		}
		if r.inflight == nil {
			// Stock adjustments between batches of sales, never beside
			// one in flight: the budget is charged once either way.
			if k, err := r.adjustments(ctx, l); err != nil && ctx.Err() == nil {
				r.log.Warn("stock adjustments not sent yet; retrying", "err", err, "sent", k)
			}
		}
		n, err := r.batch(ctx, l)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.landed = false
			r.setError(err)
			d := retry.NextBackOff()
			r.log.Warn("replay batch failed; retrying", "err", err, "retry_in", d.Round(time.Millisecond))
			sleep(ctx, d, r.wake)
		case n == 0:
			retry.Reset()
			r.clearError()
			r.synced(0)
			sleep(ctx, r.cfg.Idle, r.wake)
		default:
			// A full batch may still be on its way: only a batch landed
			// whole proves the way to HQ clear.
			if r.landed {
				retry.Reset()
				r.clearError()
			}
			r.landed = false
			if n < r.cfg.BatchSize && r.cfg.Pace > 0 {
				sleep(ctx, r.cfg.Pace, r.wake)
			}
		}
	}
}

// newBackoff is the jittered exponential backoff of reconnects and
// retries: 250ms doubling, each delay within ±50%, at most MaxBackoff.
func (r *Replayer) newBackoff() *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(250*time.Millisecond),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0.5),
		backoff.WithMaxInterval(r.cfg.MaxBackoff*2/3), // +50% jitter reaches MaxBackoff
		backoff.WithMaxElapsedTime(0),                 // never give up
	)
}

// sleep waits d, or until wake (when not nil) fires or ctx ends; it
// reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-wake:
	case <-t.C:
	}
	return true
}

func (r *Replayer) setError(err error) {
	r.mu.Lock()
	r.st.LastError = secret.RedactURLs(hint(err)) // status is read by people and support bundles
	r.mu.Unlock()
}

func (r *Replayer) clearError() {
	r.mu.Lock()
	r.st.LastError = ""
	r.mu.Unlock()
}

// synced records n rows acked (0: the outbox was found empty).
func (r *Replayer) synced(n int) {
	now := time.Now()
	if r.cfg.Health != nil {
		r.cfg.Health.HQAcked(now)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.LastSyncAt = &now
	if n > 0 {
		r.rate.add(now, n)
		r.st.Acked += uint64(n)
	}
}

// rateWindow counts events in one-second buckets over the last minute.
type rateWindow struct {
	buckets [60]struct {
		sec int64
		n   int64
	}
}

func (w *rateWindow) add(now time.Time, n int) {
	s := now.Unix()
	b := &w.buckets[s%60]
	if b.sec != s {
		b.sec, b.n = s, 0
	}
	b.n += int64(n)
}

// perSec is the rate over the last minute, or since start when younger.
func (w *rateWindow) perSec(now, start time.Time) float64 {
	s := now.Unix()
	var sum int64
	for _, b := range w.buckets {
		if b.sec <= s && s-b.sec < 60 {
			sum += b.n
		}
	}
	span := min(now.Sub(start).Seconds(), 60)
	if span < 1 {
		span = 1
	}
	return float64(sum) / span
}
