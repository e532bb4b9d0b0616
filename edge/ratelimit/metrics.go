package ratelimit

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of one limiter. Labels: level is the deciding (tightest) level —
// store, terminal, action or store_sync; action is the request's action or
// "none"; decision is allowed or denied.
type metrics struct {
	decisions *prometheus.CounterVec
	near      *prometheus.CounterVec
	latency   prometheus.Histogram
	fallback  prometheus.Gauge
	denied    atomic.Uint64 // requests denied since start, for status
	// The series of every (level, action) a decision can name, looked up
	// without building a label hash per decision (issue 26); read-only
	// after newMetrics.
	series map[seriesKey]*series
}

type seriesKey struct{ level, action string }

type series struct{ allowed, denied, near prometheus.Counter }

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_ratelimit_decisions_total",
			Help: "Rate-limit decisions by deciding (tightest) level, action and decision (allowed|denied).",
		}, []string{"level", "action", "decision"}),
		near: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_ratelimit_near_limit_total",
			Help: "Decisions that left the tightest level under 20% of its limit.",
		}, []string{"level", "action"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "posedge_ratelimit_decision_seconds",
			Help:    "Time to decide one request, on Redis or the local fallback.",
			Buckets: []float64{.0001, .00025, .0005, .001, .002, .005, .01, .025, .05, .1, .15, .25, .5, 1},
		}),
		fallback: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "posedge_ratelimit_fallback_active",
			Help: "1 while the local fallback limiter decides instead of Redis.",
		}),
	}
	// Series that exist from the start, so dashboards and alerts see zeros.
	m.series = map[seriesKey]*series{}
	add := func(lv, a string) {
		m.series[seriesKey{lv, a}] = &series{allowed: m.decisions.WithLabelValues(lv, a, "allowed"),
			denied: m.decisions.WithLabelValues(lv, a, "denied"), near: m.near.WithLabelValues(lv, a)}
	}
	for _, lv := range []string{levelStore, levelTerminal} {
		for _, a := range append([]string{noAction}, Actions()...) {
			add(lv, a)
		}
	}
	for _, a := range Actions() {
		add(levelAction, a)
	}
	add(levelStoreSync, ActionSync)
	if reg != nil {
		for _, c := range []prometheus.Collector{m.decisions, m.near, m.latency, m.fallback} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(d Decision, lvl, action string, took time.Duration) {
	s := m.series[seriesKey{lvl, action}]
	if s == nil { // not a pair newMetrics knows: a defect, still counted
		s = &series{allowed: m.decisions.WithLabelValues(lvl, action, "allowed"),
			denied: m.decisions.WithLabelValues(lvl, action, "denied"), near: m.near.WithLabelValues(lvl, action)}
	}
	if d.Allowed {
		s.allowed.Inc()
	} else {
		m.denied.Add(1)
		s.denied.Inc()
	}
	if d.Remaining*5 < d.Limit {
		s.near.Inc()
	}
	m.latency.Observe(took.Seconds())
}
