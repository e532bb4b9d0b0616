package catalog

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	changes  *prometheus.CounterVec
	revision prometheus.Gauge
	lag      prometheus.Gauge
	watching prometheus.Gauge
	reloads  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "posedge_catalog_changes_total",
			Help: "Catalog entries from HQ by outcome: applied, same (redelivered), store_wins, stale, deferred (redis lost the item: the repair restores it), deleted, invalid."}, []string{"outcome"}),
		revision: prometheus.NewGauge(prometheus.GaugeOpts{Name: "posedge_catalog_revision",
			Help: "Catalog bucket revision the store has applied through."}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "posedge_catalog_lag_changes",
			Help: "Catalog changes of this store and _all at HQ not applied yet (as of the last one applied)."}),
		watching: prometheus.NewGauge(prometheus.GaugeOpts{Name: "posedge_catalog_watching",
			Help: "1 while the watch of HQ's catalog is set up and connected."}),
		reloads: prometheus.NewCounter(prometheus.CounterOpts{Name: "posedge_catalog_reloads_total",
			Help: "Full reloads of the catalog (first start, or the bucket recreated or purged)."}),
	}
	for _, o := range []string{"applied", "same", "store_wins", "stale", "deferred", "deleted", "invalid"} {
		m.changes.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.changes, m.revision, m.lag, m.watching, m.reloads)
	}
	return m
}
