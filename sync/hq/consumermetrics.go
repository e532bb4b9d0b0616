package hq

import (
	"context"
	"log/slog"
	"time"

	"github.com/posedge/posedge/sync/hqdb"
	"github.com/prometheus/client_golang/prometheus"
)

// ObserveReceiver adds the figures only the receiver knows: the durable
// consumer's lag as JetStream counts it, and each store's completeness.
func (m *Metrics) ObserveReceiver(r *Receiver, store hqdb.Store, log *slog.Logger) {
	m.Registry.MustRegister(&consumerCollector{recv: r, store: store, log: log})
}

var (
	consumerPendingDesc = prometheus.NewDesc("posedge_hq_consumer_pending_messages",
		"Messages in the stream not yet delivered to any posedge-hq: the consumer's lag behind the stores.", nil, nil)
	consumerAckPendingDesc = prometheus.NewDesc("posedge_hq_consumer_ack_pending_messages",
		"Messages delivered to a posedge-hq and not yet acked (being stored, or due for redelivery).", nil, nil)
	consumerRedeliveredDesc = prometheus.NewDesc("posedge_hq_consumer_redelivered_messages",
		"Messages delivered more than once and not yet acked.", nil, nil)
	incompleteDesc = prometheus.NewDesc("posedge_hq_store_incomplete_manifests",
		"Terminal-days of the store whose manifest differs from the stored rows (0: every manifest matches).", []string{"store_id"}, nil)
)

// consumerCollector reads the consumer's info from JetStream and the
// completeness report from the database at each scrape.
type consumerCollector struct {
	recv  *Receiver
	store hqdb.Store
	log   *slog.Logger
}

func (c *consumerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- consumerPendingDesc
	ch <- consumerAckPendingDesc
	ch <- consumerRedeliveredDesc
	ch <- incompleteDesc
}

func (c *consumerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if cons := c.recv.consumer(); cons != nil {
		if info, err := cons.Info(ctx); err != nil {
			c.log.Warn("metrics: consumer info unavailable", "err", err)
		} else {
			ch <- prometheus.MustNewConstMetric(consumerPendingDesc, prometheus.GaugeValue, float64(info.NumPending))
			ch <- prometheus.MustNewConstMetric(consumerAckPendingDesc, prometheus.GaugeValue, float64(info.NumAckPending))
			ch <- prometheus.MustNewConstMetric(consumerRedeliveredDesc, prometheus.GaugeValue, float64(info.NumRedelivered))
		}
	}
	ws, err := c.store.Watermarks(ctx)
	if err != nil {
		c.log.Warn("metrics: stores unavailable", "err", err)
		return
	}
	rep, err := c.store.Completeness(ctx, time.Now())
	if err != nil {
		c.log.Warn("metrics: completeness unavailable", "err", err)
		return
	}
	incomplete := make(map[string]int, len(ws))
	for _, w := range ws {
		incomplete[w.StoreID] = 0
	}
	for _, d := range rep.Incomplete {
		incomplete[d.StoreID]++
	}
	for id, n := range incomplete {
		ch <- prometheus.MustNewConstMetric(incompleteDesc, prometheus.GaugeValue, float64(n), id)
	}
}
