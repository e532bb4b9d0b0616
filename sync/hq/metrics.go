package hq

import (
	"context"
	"log/slog"
	"time"

	"github.com/posedge/posedge/sync/hqdb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are posedge-hq's Prometheus metrics, in a registry of their own.
type Metrics struct {
	Registry *prometheus.Registry

	ingested    *prometheus.CounterVec // by type
	duplicates  *prometheus.CounterVec // by type
	conflicts   prometheus.Counter
	rejected    *prometheus.CounterVec // by reason
	quarantined *prometheus.CounterVec // by reason
	commit      prometheus.Histogram
	batchErrs   prometheus.Counter
	haveReqs    *prometheus.CounterVec // by result
	deliverReqs *prometheus.CounterVec // by result
}

// NewMetrics registers the metrics; per-store lag and counts are read
// from store at each scrape, so every posedge-hq process reports the
// same figures whichever one stored the rows.
func NewMetrics(store hqdb.Store, version string, log *slog.Logger) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		ingested: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_hq_ingested_total",
			Help: "Messages stored for the first time, by type (txn, manifest, heartbeat).",
		}, []string{"type"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_hq_duplicates_total",
			Help: "Messages already stored (redeliveries, replays past the duplicate window), acked and not stored again.",
		}, []string{"type"}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posedge_hq_conflicts_total",
			Help: "Transactions whose (store_id, flow_no) is stored with a different body; kept in the conflicts table.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_hq_rejected_total",
			Help: "Messages that can never be stored (terminated in JetStream), by reason.",
		}, []string{"reason"}),
		quarantined: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_hq_quarantined_total",
			Help: "Transactions kept in the quarantine table instead of being stored and counted (acknowledged), by reason (amount, day_total_overflow).",
		}, []string{"reason"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "posedge_hq_batch_commit_seconds",
			Help:    "Time to store one batch in one database transaction.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		batchErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posedge_hq_batch_errors_total",
			Help: "Batches the database refused; their messages are redelivered.",
		}),
		haveReqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_hq_have_requests_total",
			Help: "Stores' \"what do you hold\" requests answered, by result.",
		}, []string{"result"}),
		deliverReqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_hq_deliver_requests_total",
			Help: "Stores' direct deliveries of a transaction (outside the stream, after a duplicate ack HQ lacks), by result.",
		}, []string{"result"}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "posedge_hq_build_info",
		Help:        "posedge-hq build; always 1.",
		ConstLabels: prometheus.Labels{"version": version},
	})
	build.Set(1)
	reg.MustRegister(m.ingested, m.duplicates, m.conflicts, m.rejected, m.quarantined, m.commit, m.batchErrs, m.haveReqs, m.deliverReqs, build,
		&storeCollector{store: store, log: log},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *Metrics) outcome(kind hqdb.MsgKind, o hqdb.Outcome) {
	switch o {
	case hqdb.Inserted:
		m.ingested.WithLabelValues(kind.String()).Inc()
	case hqdb.Duplicate:
		m.duplicates.WithLabelValues(kind.String()).Inc()
	case hqdb.Conflict:
		m.conflicts.Inc()
	}
}

// Counts is a snapshot of the counters, summed over their labels.
type Counts struct {
	Ingested, Duplicates, Conflicts, Rejected, BatchErrors, Quarantined float64
}

// Counts reads the counters (for tests and logs).
func (m *Metrics) Counts() Counts {
	return Counts{
		Ingested:    sum(m.ingested),
		Duplicates:  sum(m.duplicates),
		Conflicts:   value(m.conflicts),
		Rejected:    sum(m.rejected),
		BatchErrors: value(m.batchErrs),
		Quarantined: sum(m.quarantined),
	}
}

func value(c prometheus.Metric) float64 {
	var d dto.Metric
	if c.Write(&d) != nil || d.Counter == nil {
		return 0
	}
	return d.Counter.GetValue()
}

func sum(v *prometheus.CounterVec) float64 {
	ch := make(chan prometheus.Metric, 64)
	go func() { v.Collect(ch); close(ch) }()
	var total float64
	for c := range ch {
		total += value(c)
	}
	return total
}

// storeCollector reports per-store figures read from the database.
type storeCollector struct {
	store hqdb.Store
	log   *slog.Logger
}

var (
	lagDesc = prometheus.NewDesc("posedge_hq_store_lag_seconds",
		"Now minus created_at of the newest stored transaction of the store.", []string{"store_id"}, nil)
	countDesc = prometheus.NewDesc("posedge_hq_store_transactions",
		"Transactions stored for the store.", []string{"store_id"}, nil)
	seenDesc = prometheus.NewDesc("posedge_hq_store_last_seen_seconds",
		"Seconds since any message of the store was stored.", []string{"store_id"}, nil)

	// The fleet view (contract §7) as gauges, one series per store.
	hbAgeDesc = prometheus.NewDesc("posedge_hq_store_heartbeat_age_seconds",
		"Seconds since the store's last heartbeat was received; absent for a store that never sent one.", []string{"store_id"}, nil)
	backlogDesc = prometheus.NewDesc("posedge_hq_store_backlog",
		"Transactions the store had not yet sent, as of its last heartbeat.", []string{"store_id"}, nil)
	oldestDesc = prometheus.NewDesc("posedge_hq_store_oldest_unsent_age_seconds",
		"Age of the store's oldest unsent transaction, as of its last heartbeat (0: none unsent).", []string{"store_id"}, nil)
	offsetDesc = prometheus.NewDesc("posedge_hq_store_clock_offset_seconds",
		"The store's clock minus HQ's, estimated from its last heartbeat (good to about a second); absent without a heartbeat.", []string{"store_id"}, nil)
	storeConflictsDesc = prometheus.NewDesc("posedge_hq_store_conflicts",
		"Transactions of the store kept in the conflicts table (same flow number, another body).", []string{"store_id"}, nil)
	storeQuarantinedDesc = prometheus.NewDesc("posedge_hq_store_quarantined",
		"Transactions of the store kept in the quarantine table.", []string{"store_id"}, nil)
	silentDesc = prometheus.NewDesc("posedge_hq_store_silent",
		"1 when nothing came from the store for silent_after, else 0.", []string{"store_id"}, nil)
)

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{lagDesc, countDesc, seenDesc, hbAgeDesc, backlogDesc, oldestDesc, offsetDesc,
		storeConflictsDesc, storeQuarantinedDesc, silentDesc} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, err := c.store.Watermarks(ctx)
	if err != nil {
		c.log.Warn("metrics: per-store figures unavailable", "err", err)
		return
	}
	now := time.Now()
	for _, w := range ws {
		ch <- prometheus.MustNewConstMetric(countDesc, prometheus.GaugeValue, float64(w.Count), w.StoreID)
		if !w.LastCreatedAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, now.Sub(w.LastCreatedAt).Seconds(), w.StoreID)
		}
		if !w.LastSeenAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(seenDesc, prometheus.GaugeValue, now.Sub(w.LastSeenAt).Seconds(), w.StoreID)
		}
	}
	fleet, err := c.store.Fleet(ctx, now)
	if err != nil {
		c.log.Warn("metrics: fleet figures unavailable", "err", err)
		return
	}
	for _, e := range fleet {
		collectFleetEntry(ch, e, now)
	}
}

// collectFleetEntry sends one store's fleet gauges.
func collectFleetEntry(ch chan<- prometheus.Metric, e hqdb.StoreEntry, now time.Time) {
	g := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, e.StoreID)
	}
	if e.HasHeartbeat {
		g(hbAgeDesc, max(now.Sub(e.LastHeartbeatAt).Seconds(), 0))
		g(offsetDesc, float64(e.ClockOffsetMS)/1000)
	}
	g(backlogDesc, float64(e.Backlog))
	oldest := 0.0
	if !e.OldestUnsentAt.IsZero() && e.Backlog > 0 {
		oldest = max(now.Sub(e.OldestUnsentAt).Seconds(), 0)
	}
	g(oldestDesc, oldest)
	// posedge_hq_store_incomplete_manifests comes from the consumer
	// collector (consumermetrics.go).
	g(storeConflictsDesc, float64(e.Conflicts))
	g(storeQuarantinedDesc, float64(e.Quarantined))
	silent := 0.0
	if e.Silent {
		silent = 1
	}
	g(silentDesc, silent)
}
