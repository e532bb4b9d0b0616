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
}

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
	for _, lv := range []string{levelStore, levelTerminal} {
		for _, a := range append([]string{noAction}, Actions()...) {
			m.near.WithLabelValues(lv, a)
			for _, d := range []string{"allowed", "denied"} {
				m.decisions.WithLabelValues(lv, a, d)
			}
		}
	}
	for _, a := range Actions() {
		m.near.WithLabelValues(levelAction, a)
		for _, d := range []string{"allowed", "denied"} {
			m.decisions.WithLabelValues(levelAction, a, d)
		}
	}
	m.near.WithLabelValues(levelStoreSync, ActionSync)
	for _, d := range []string{"allowed", "denied"} {
		m.decisions.WithLabelValues(levelStoreSync, ActionSync, d)
	}
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
	dec := "allowed"
	if !d.Allowed {
		dec = "denied"
		m.denied.Add(1)
	}
	m.decisions.WithLabelValues(lvl, action, dec).Inc()
	if d.Remaining*5 < d.Limit {
		m.near.WithLabelValues(lvl, action).Inc()
	}
	m.latency.Observe(took.Seconds())
}
