package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/lock"
	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/offline/journal"
)

// Config tunes the reconciler; zero values take the defaults.
type Config struct {
	// Retention is the journal's (journal.retention): older days are
	// partly pruned and never reconciled.
	Retention time.Duration
	// Confirm is the pause between the two looks; only a difference seen
	// in both, the same, is acted on. Default 3s.
	Confirm time.Duration
	// Settle bounds the wait, in each look, for sales already in Redis to
	// reach the journal. Default 2s.
	Settle time.Duration
	// GapSettle: a flow number still missing this long after later ones
	// were journaled counts as a gap. Default 5s.
	GapSettle time.Duration
	// DayEndDelay: the run for a business day starts this long after the
	// day ended (batch uploads of the last minutes land first). Default 10m.
	DayEndDelay time.Duration
	// LockTTL bounds how long a daemon killed mid-run keeps others from
	// reconciling; the holder extends it every third of it. Default 15s.
	LockTTL time.Duration
}

// Errors callers tell apart with errors.Is.
var (
	// ErrRunning: another reconciliation (this daemon's or another's)
	// holds the lock.
	ErrRunning = errors.New("a reconciliation is already running")
	// ErrRedisDown: Redis is unreachable or refuses writes; the run waits
	// for it (degraded sales are applied first).
	ErrRedisDown = errors.New("redis unavailable: reconciliation waits until it is back")
)

// Reconciler runs the reconciliation and the flow-continuity check.
type Reconciler struct {
	cfg Config
	l   *ledger.Ledger
	j   *journal.Journal
	log *slog.Logger
	m   *metrics
	now func() time.Time

	lastDiffs atomic.Int64
	last      atomic.Pointer[Report]
	gapMu     sync.Mutex // one continuity check at a time
	peerMu    sync.Mutex
	peerAt    time.Time // when another daemon was last seen pinging this Redis

	afterLook         func(n int) // tests: runs after each look
	betweenStockReads func(n int) // tests: runs after each chunk of stock read
	stockChunk        int         // tests: items per stock read; 0 = StockChunk
}

type metrics struct {
	runs        *prometheus.CounterVec
	differences *prometheus.CounterVec
	drift       prometheus.Gauge
	driftItems  prometheus.Gauge
	gaps        prometheus.Counter
	lastRun     prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "posedge_reconcile_runs_total",
			Help: "Reconciliations of Redis against the journal, by result (clean, corrected, skipped, failed)."}, []string{"result"}),
		differences: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "posedge_reconcile_differences_total",
			Help: "Differences between Redis and the journal confirmed by reconciliation (and corrected from the journal), by kind: daily, hourly, stock."}, []string{"kind"}),
		drift: prometheus.NewGauge(prometheus.GaugeOpts{Name: "posedge_stock_drift",
			Help: "Units of stock by which Redis differed from the journal's expectation at the last reconciliation (sum over items); > 0 is an alarm."}),
		driftItems: prometheus.NewGauge(prometheus.GaugeOpts{Name: "posedge_stock_drift_items",
			Help: "Items whose Redis stock differed from the journal's expectation at the last reconciliation."}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{Name: "posedge_flow_gaps_total",
			Help: "Normal-mode flow numbers never journaled (gaps in the Redis sequence) found by the continuity check."}),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{Name: "posedge_reconcile_last_run_timestamp_seconds",
			Help: "When the last reconciliation finished (clean or corrected)."}),
	}
	for _, r := range []string{"clean", "corrected", "skipped", "failed"} {
		m.runs.WithLabelValues(r)
	}
	for _, k := range []string{"daily", "hourly", "stock"} {
		m.differences.WithLabelValues(k)
	}
	if reg != nil {
		reg.MustRegister(m.runs, m.differences, m.drift, m.driftItems, m.gaps, m.lastRun)
	}
	return m
}

// lockName is the store-wide job lock one reconciliation at a time holds.
const lockName = "reconcile"

// New makes a reconciler of the ledger's Redis against the journal.
func New(cfg Config, l *ledger.Ledger, j *journal.Journal, log *slog.Logger, reg prometheus.Registerer) *Reconciler {
	if cfg.Confirm <= 0 {
		cfg.Confirm = 3 * time.Second
	}
	if cfg.Settle <= 0 {
		cfg.Settle = 2 * time.Second
	}
	if cfg.GapSettle <= 0 {
		cfg.GapSettle = 5 * time.Second
	}
	if cfg.DayEndDelay <= 0 {
		cfg.DayEndDelay = 10 * time.Minute
	}
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = 15 * time.Second
	}
	if cfg.Retention < 24*time.Hour {
		cfg.Retention = 90 * 24 * time.Hour
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reconciler{cfg: cfg, l: l, j: j, log: log, m: newMetrics(reg), now: time.Now}
}

// Differences is the number of differences the last completed run found:
// what `posedge status` reports (WARN while > 0).
func (r *Reconciler) Differences() int64 { return r.lastDiffs.Load() }

// Last is the report of the last completed run, or nil.
func (r *Reconciler) Last() *Report { return r.last.Load() }

// Report is what one run found and did.
type Report struct {
	Days        []string    `json:"days"`
	StartedAt   time.Time   `json:"started_at"`
	FinishedAt  time.Time   `json:"finished_at"`
	Differences int         `json:"differences"` // confirmed, each corrected unless skipped
	Corrected   int         `json:"corrected"`
	Counters    []Diff      `json:"counters,omitempty"`
	Stock       []StockDiff `json:"stock,omitempty"`
	Unconfirmed int         `json:"unconfirmed"`           // seen once only: sales in flight
	Skipped     []string    `json:"skipped,omitempty"`     // left alone this time, and why (retried next run)
	NotCovered  []string    `json:"not_covered,omitempty"` // days asked that the journal does not hold whole
	FlowGaps    int64       `json:"flow_gaps"`             // numbers found missing by this run's continuity check
	FlowChecked int64       `json:"flow_checked_to"`       // continuity checked up to this sequence number
}

// Diff is one counter field Redis holds differently from the journal.
type Diff struct {
	Day     string `json:"date"`
	Key     string `json:"key"` // daily | hourly
	Field   string `json:"field"`
	Redis   int64  `json:"redis"`
	Journal int64  `json:"journal"`
}

// StockDiff is one item whose Redis stock is not what the journal expects.
type StockDiff struct {
	Barcode  string `json:"barcode"`
	Redis    *int64 `json:"redis"` // nil: Redis lacks the item
	Expected int64  `json:"expected"`
	Drift    int64  `json:"drift"` // Redis − expected

	item journal.ItemStock // the journal's copy, to restore an item Redis lost
}

func (d Diff) id() string   { return d.Day + "|" + d.Key + "|" + d.Field }
func (d Diff) delta() int64 { return d.Journal - d.Redis }

// DefaultDays are the business days a scheduled run checks: today and
// yesterday.
func (r *Reconciler) DefaultDays() []string {
	now := r.now()
	return []string{r.l.Day(now.Add(-24 * time.Hour)), r.l.Day(now)}
}

// Run reconciles the given business days (YYYYMMDD) and the stock under
// the store-wide lock: it looks twice, Confirm apart, and corrects Redis
// from the journal only where both looks agree.
func (r *Reconciler) Run(ctx context.Context, days []string) (*Report, error) {
	rep := &Report{StartedAt: r.now().UTC()}
	if r.l.Degraded() {
		r.m.runs.WithLabelValues("skipped").Inc()
		return nil, ErrRedisDown
	}
	err := r.l.JobLock(lockName).Do(ctx, r.cfg.LockTTL, func(ctx context.Context, lk *lock.Lock) error {
		return r.run(ctx, lk, days, rep)
	})
	rep.FinishedAt = r.now().UTC()
	switch {
	case errors.Is(err, lock.ErrHeld):
		r.m.runs.WithLabelValues("skipped").Inc()
		return nil, ErrRunning
	case errors.Is(err, lock.ErrFenced) || errors.Is(err, lock.ErrLost):
		r.m.runs.WithLabelValues("failed").Inc()
		return nil, err
	case err != nil:
		r.m.runs.WithLabelValues("failed").Inc()
		if redisdb.IsUnavailable(err) {
			return nil, fmt.Errorf("%w (%v)", ErrRedisDown, err)
		}
		return nil, err
	}
	r.lastDiffs.Store(int64(rep.Differences))
	r.last.Store(rep)
	r.m.lastRun.Set(float64(rep.FinishedAt.Unix()))
	switch {
	case rep.Differences > 0:
		r.m.runs.WithLabelValues("corrected").Inc()
	case len(rep.Skipped) > 0:
		r.m.runs.WithLabelValues("skipped").Inc()
	default:
		r.m.runs.WithLabelValues("clean").Inc()
	}
	return rep, nil
}

func (r *Reconciler) run(ctx context.Context, lk *lock.Lock, days []string, rep *Report) error {
	for _, d := range dedup(days) {
		if why, err := r.covered(ctx, d); err != nil {
			return err
		} else if why != "" {
			rep.NotCovered = append(rep.NotCovered, d+": "+why)
			continue
		}
		rep.Days = append(rep.Days, d)
	}
	// A Redis that lost INCRs gets its sequence raised first, so every
	// journaled number is at or below the snapshot's.
	if err := r.l.RaiseSequence(ctx); err != nil {
		return err
	}
	if err := r.l.Ping(ctx); err != nil { // mark this daemon alive: another's mark shows a peer
		return err
	}
	gaps, checked, err := r.CheckFlowGaps(ctx)
	if err != nil {
		r.log.Warn("flow-number continuity check", "err", err)
	}
	rep.FlowGaps, rep.FlowChecked = gaps, checked

	first, err := r.look(ctx, rep.Days)
	if err != nil {
		return err
	}
	if r.afterLook != nil {
		r.afterLook(1)
	}
	if first.empty() {
		rep.Skipped = append(rep.Skipped, first.skipped()...)
		if first.stockSkipped == "" {
			r.setDrift(nil)
		}
		return nil
	}
	// Sample who pings Redis while we wait: a second daemon sharing this
	// Redis journals its own sales, which ours never holds.
	peer := false
	deadline := time.Now().Add(r.cfg.Confirm)
	for time.Now().Before(deadline) {
		peer = r.peerRecently(ctx) || peer
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(250*time.Millisecond, time.Until(deadline)+time.Millisecond)):
		}
	}
	if peer {
		rep.Skipped = append(rep.Skipped, "all: another daemon shares this Redis; its sales are in its own journal")
		r.log.Info("reconciliation skipped: another posedge daemon shares this store's Redis")
		return nil
	}
	second, err := r.look(ctx, rep.Days)
	if err != nil {
		return err
	}
	if r.afterLook != nil {
		r.afterLook(2)
	}
	if first.runID != second.runID {
		rep.Skipped = append(rep.Skipped, "all: the Redis master changed between the two looks (its repair comes first)")
		return nil
	}

	// Only what both looks saw, the same, counts.
	seen := map[string]int64{}
	for _, d := range first.counters {
		seen[d.id()] = d.delta()
	}
	var counters []Diff
	for _, d := range second.counters {
		if v, ok := seen[d.id()]; ok && v == d.delta() {
			counters = append(counters, d)
		} else {
			rep.Unconfirmed++
		}
	}
	seenStock := map[string]StockDiff{}
	for _, s := range first.stock {
		seenStock[s.Barcode] = s
	}
	var stock []StockDiff
	for _, s := range second.stock {
		if o, ok := seenStock[s.Barcode]; ok && (o.Redis == nil) == (s.Redis == nil) && o.Drift == s.Drift {
			stock = append(stock, s)
		} else {
			rep.Unconfirmed++
		}
	}
	if first.stockSkipped != "" || second.stockSkipped != "" {
		stock = nil
	}
	skipDay := map[string]string{}
	for d, why := range first.skipDays {
		skipDay[d] = why
	}
	for d, why := range second.skipDays {
		skipDay[d] = why
	}
	if len(counters)+len(stock) > 0 {
		// A sale whose effects are in Redis but whose journal write is
		// still pending (or failed: the till's retry journals it) would
		// look like a difference for as long as it waits: leave its day
		// and its items alone.
		pend, err := r.l.Unjournaled(ctx)
		if err != nil {
			return err
		}
		pendItems := map[string]bool{}
		for _, p := range pend {
			if p.Day != "" {
				skipDay[p.Day] = fmt.Sprintf("sale %s is in Redis but not yet in the journal", p.FlowNo)
			}
			for _, b := range p.Barcodes {
				pendItems[b] = true
			}
		}
		kept := stock[:0]
		for _, s := range stock {
			if pendItems[s.Barcode] {
				rep.Skipped = append(rep.Skipped, "stock "+s.Barcode+": a sale of it is in Redis but not yet in the journal")
				continue
			}
			kept = append(kept, s)
		}
		stock = kept
	}
	keptC := counters[:0]
	for _, d := range counters {
		if skipDay[d.Day] == "" {
			keptC = append(keptC, d)
		}
	}
	counters = keptC
	rep.Skipped = append(rep.Skipped, (&look{skipDays: skipDay, stockSkipped: cmp.Or(first.stockSkipped, second.stockSkipped)}).skipped()...)

	rep.Counters, rep.Stock = counters, stock
	rep.Differences = len(counters) + len(stock)
	for _, d := range counters {
		r.m.differences.WithLabelValues(d.Key).Inc()
		r.log.Warn("reconciliation: redis counter differs from the journal; corrected from the journal",
			"date", d.Day, "key", d.Key, "field", d.Field, "redis", d.Redis, "journal", d.Journal)
	}
	for _, s := range stock {
		r.m.differences.WithLabelValues("stock").Inc()
		red := "missing"
		if s.Redis != nil {
			red = strconv.FormatInt(*s.Redis, 10)
		}
		r.log.Error("stock drift: redis stock differs from what the journal expects; corrected from the journal",
			"barcode", s.Barcode, "redis", red, "expected", s.Expected, "drift", s.Drift,
			"hint", "a sale or stock change bypassed posedge, or redis lost writes")
	}
	if second.stockSkipped == "" && first.stockSkipped == "" {
		r.setDrift(stock)
	}
	n, err := r.correct(ctx, lk, counters, stock)
	rep.Corrected = n
	return err
}

func (r *Reconciler) setDrift(stock []StockDiff) {
	var units int64
	for _, s := range stock {
		if s.Drift < 0 {
			units -= s.Drift
		} else {
			units += s.Drift
		}
	}
	r.m.drift.Set(float64(units))
	r.m.driftItems.Set(float64(len(stock)))
}

// covered tells why a day cannot be reconciled, or "" when it can.
func (r *Reconciler) covered(ctx context.Context, day string) (string, error) {
	if !businessday.Valid(day) {
		return "not a date (YYYYMMDD)", nil
	}
	now := r.now()
	if day > r.l.Day(now) {
		return "in the future", nil
	}
	if day < r.l.Day(now.Add(-r.cfg.Retention+24*time.Hour)) {
		return "older than journal.retention: the journal no longer holds all of it", nil
	}
	from, err := r.fromDay(ctx)
	if err != nil {
		return "", err
	}
	if day < from {
		return "before " + from + ", the first business day this journal holds whole (Redis's counters of earlier days are left as they are)", nil
	}
	return "", nil
}

// fromDay is the first business day the journal holds whole, fixed the
// first time it is asked: the journal's first day when it has rows; when
// it is empty, today — unless Redis already counts sales of today (a new
// journal on a store that sold before: a replaced disk), then tomorrow.
func (r *Reconciler) fromDay(ctx context.Context) (string, error) {
	v, ok, err := r.j.Meta(ctx, journal.MetaReconcileFrom)
	if err != nil || ok {
		return v, err
	}
	from, err := r.j.FirstBusinessDay(ctx)
	if err != nil {
		return "", err
	}
	today := r.l.Day(r.now())
	if from == "" || from > today {
		from = today
		counted, err := r.l.HasDayCounters(ctx, today)
		if err != nil {
			return "", err
		}
		if counted {
			from = r.l.Day(r.now().Add(24 * time.Hour))
			r.log.Warn("the journal is new but redis already counts sales of today: reconciliation starts tomorrow", "from", from)
		}
	}
	if err := r.j.SetMeta(ctx, journal.MetaReconcileFrom, from); err != nil {
		r.log.Warn("remember the first business day to reconcile", "from", from, "err", err)
	}
	return from, nil
}

func dedup(days []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range days {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	sort.Strings(out)
	return out
}
