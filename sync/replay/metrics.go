package replay

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Error kinds, the label of posedge_replay_publish_errors_total.
const (
	errTimeout      = "timeout"      // no ack within ack_timeout: ambiguous, resent with the same Msg-Id
	errDisconnected = "disconnected" // the connection dropped with the publish in flight
	errNoStream     = "no_stream"    // nothing captured the subject (posedge-hq has not created the stream)
	errStreamFull   = "stream_full"  // a limit of HQ's stream refused it (this store's cap, or the whole stream's): resent later
	errRefused      = "refused"      // JetStream answered with another transient error
	errOther        = "other"
)

type metrics struct {
	published    prometheus.Counter
	acked        prometheus.Counter
	confirmed    prometheus.Counter
	quarantined  prometheus.Counter
	errors       *prometheus.CounterVec
	batch        prometheus.Histogram
	connected    prometheus.Gauge
	backlog      prometheus.Gauge
	backlogBytes prometheus.Gauge
	oldestAge    prometheus.Gauge
	hqConfirmed  prometheus.Counter
	unconfirmed  prometheus.Gauge
	resent       prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posedge_replay_published_total",
			Help: "Transaction messages published to HQ, resends included.",
		}),
		acked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posedge_replay_acked_total",
			Help: "Journal rows marked synced: JetStream acknowledged them, or HQ confirmed it holds them.",
		}),
		confirmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posedge_replay_hq_confirmed_total",
			Help: "Rows already sent once that HQ said it holds, so they were marked synced without a resend.",
		}),
		quarantined: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posedge_replay_quarantined_total",
			Help: "Rows HQ refused for good (too large, invalid), set aside in the journal's quarantine.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_replay_publish_errors_total",
			Help: "Publishes without an ack, by kind (timeout|disconnected|no_stream|stream_full|refused|other); the rows are resent.",
		}, []string{"kind"}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "posedge_replay_batch_seconds",
			Help:    "Time to publish one batch and collect its acks (the sync-policy wait excluded).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "posedge_hq_connected",
			Help: "1 while the NATS connection to HQ is up.",
		}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "posedge_replay_backlog_rows",
			Help: "Journal rows not yet acknowledged by HQ (quarantined rows excluded).",
		}),
		backlogBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "posedge_replay_backlog_bytes",
			Help: "Body bytes of the rows not yet acknowledged by HQ.",
		}),
		oldestAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "posedge_replay_oldest_unsent_age_seconds",
			Help: "Age of the oldest row not yet acknowledged by HQ; 0 when none.",
		}),
		hqConfirmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posedge_hq_confirmed_total",
			Help: "Journal rows posedge-hq confirmed storing (the have query): delivered, and from then on prunable.",
		}),
		unconfirmed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "posedge_hq_unconfirmed",
			Help: "Journal rows JetStream acknowledged that posedge-hq has not confirmed storing yet.",
		}),
		resent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "posedge_hq_resent_total",
			Help: "Journal rows published again because posedge-hq lacked them after JetStream had acknowledged them.",
		}),
	}
	for _, k := range []string{errTimeout, errDisconnected, errNoStream, errStreamFull, errRefused, errOther} {
		m.errors.WithLabelValues(k)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.published, m.acked, m.confirmed, m.quarantined, m.errors,
			m.batch, m.connected, m.backlog, m.backlogBytes, m.oldestAge, m.hqConfirmed, m.unconfirmed, m.resent} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register replay metrics: %w", err)
			}
		}
	}
	return m, nil
}
