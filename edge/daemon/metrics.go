package daemon

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/posedge/posedge/sync/replay"
)

// daemonMetrics are the metrics the daemon itself owns: build info, the
// journal's group-commit size, and the contract's backlog gauges.
type daemonMetrics struct {
	commitBatch prometheus.Histogram
}

func newDaemonMetrics(reg prometheus.Registerer, version string) *daemonMetrics {
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "posedge_build_info",
		Help: "Always 1; the version label says which posedge runs.", ConstLabels: prometheus.Labels{"version": version}})
	info.Set(1)
	m := &daemonMetrics{commitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "posedge_journal_commit_batch_size",
		Help:    "Writes sharing one journal commit (one fsync): group commit at work.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}})}
	reg.MustRegister(info, m.commitBatch)
	return m
}

func (m *daemonMetrics) observeCommit(n int) { m.commitBatch.Observe(float64(n)) }

// watchReplay exports the backlog under the contract's names (§4), read
// from the replay's view of the journal (refreshed every few seconds).
func (m *daemonMetrics) watchReplay(reg prometheus.Registerer, r *replay.Replayer) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "posedge_journal_backlog",
			Help: "Journaled transactions HQ has not acknowledged yet."},
			func() float64 { return float64(r.Status().Backlog) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "posedge_journal_oldest_unsynced_seconds",
			Help: "Age of the oldest transaction HQ has not acknowledged; 0 when none."},
			func() float64 {
				if o := r.Status().OldestUnsent; o != nil {
					return time.Since(*o).Seconds()
				}
				return 0
			}),
	)
}
