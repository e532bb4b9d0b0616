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
	direct       prometheus.Counter
}

// counter and gauge make the plain series, which differ only by name
// and help.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		published: counter("posedge_replay_published_total",
			"Transaction messages published to HQ, resends included."),
		acked: counter("posedge_replay_acked_total",
			"Journal rows marked synced: JetStream acknowledged them, or HQ confirmed it holds them."),
		confirmed: counter("posedge_replay_hq_confirmed_total",
			"Rows already sent once that HQ said it holds, so they were marked synced without a resend."),
		quarantined: counter("posedge_replay_quarantined_total",
			"Rows HQ refused for good (too large, invalid), set aside in the journal's quarantine."),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "posedge_replay_publish_errors_total",
			Help: "Publishes without an ack, by kind (timeout|disconnected|no_stream|stream_full|refused|other); the rows are resent.",
		}, []string{"kind"}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "posedge_replay_batch_seconds",
			Help:    "Time to publish one batch and collect its acks (the sync-policy wait excluded).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		connected: gauge("posedge_hq_connected",
			"1 while the NATS connection to HQ is up."),
		backlog: gauge("posedge_replay_backlog_rows",
			"Journal rows not yet acknowledged by HQ (quarantined rows excluded)."),
		backlogBytes: gauge("posedge_replay_backlog_bytes",
			"Body bytes of the rows not yet acknowledged by HQ."),
		oldestAge: gauge("posedge_replay_oldest_unsent_age_seconds",
			"Age of the oldest row not yet acknowledged by HQ; 0 when none."),
		hqConfirmed: counter("posedge_hq_confirmed_total",
			"Journal rows posedge-hq confirmed storing (the have query): delivered, and from then on prunable."),
		unconfirmed: gauge("posedge_hq_unconfirmed",
			"Journal rows JetStream acknowledged that posedge-hq has not confirmed storing yet."),
		resent: counter("posedge_hq_resent_total",
			"Journal rows published again because posedge-hq lacked them after JetStream had acknowledged them."),
		direct: counter("posedge_hq_delivered_direct_total",
			"Journal rows handed to posedge-hq directly, outside the stream, because JetStream acknowledged them as duplicates and HQ lacked them (a Nats-Msg-Id claimed by another message)."),
	}
	for _, k := range []string{errTimeout, errDisconnected, errNoStream, errStreamFull, errRefused, errOther} {
		m.errors.WithLabelValues(k)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.published, m.acked, m.confirmed, m.quarantined, m.errors,
			m.batch, m.connected, m.backlog, m.backlogBytes, m.oldestAge, m.hqConfirmed, m.unconfirmed, m.resent, m.direct} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register replay metrics: %w", err)
			}
		}
	}
	return m, nil
}
