package hq_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/wire"
)

// gauge is the value of a gauge series of m's registry, and whether it
// exists; labels are name, value pairs.
func gauge(t *testing.T, m *hq.Metrics, name string, labels ...string) (float64, bool) {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range s.GetLabel() {
					if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue series
				}
			}
			return s.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestMetricsReportConsumerLagAndIncompleteDays(t *testing.T) {
	n := testenv.StartNATS(t)
	cfg := testConfig(n.URL(), "sqlite://"+filepath.Join(t.TempDir(), "hq.db"))
	r := startReceiver(t, cfg, "hq")
	r.metrics.ObserveReceiver(r.recv, r.store, testLogger(t))
	_, js := connect(t, n.URL())
	for i := 1; i <= 3; i++ {
		s := sale{store: "S001", flow: fmt.Sprint(i), cents: 100}
		publish(t, js, txnMsg("S001", fmt.Sprintf("S001.%d", i), s.body()))
	}
	testenv.WaitFor(t, waitLong, "3 sales stored", func() bool { return count(t, r.store, "S001") == 3 })

	testenv.WaitFor(t, waitLong, "the consumer's lag reported as 0", func() bool {
		p, ok1 := gauge(t, r.metrics, "posedge_hq_consumer_pending_messages")
		a, ok2 := gauge(t, r.metrics, "posedge_hq_consumer_ack_pending_messages")
		return ok1 && ok2 && p == 0 && a == 0
	})
	if v, ok := gauge(t, r.metrics, "posedge_hq_store_incomplete_manifests", "store_id", "S001"); !ok || v != 0 {
		t.Errorf("incomplete days of S001 without a manifest = %v (reported %v), want 0", v, ok)
	}

	// A manifest of four sales where three are stored: one day incomplete.
	day := t0.Format("20060102")
	insert(t, r.store, manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: day, Sales: 4, SalesCents: 400,
		SentAt: t0.Format(time.RFC3339)}, t0))
	if v, ok := gauge(t, r.metrics, "posedge_hq_store_incomplete_manifests", "store_id", "S001"); !ok || v != 1 {
		t.Errorf("incomplete days of S001 = %v (reported %v), want 1", v, ok)
	}
	// The store's newer manifest agrees with HQ: complete again.
	insert(t, r.store, manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: day, Sales: 3, SalesCents: 300,
		SentAt: t0.Add(time.Minute).Format(time.RFC3339)}, t0.Add(time.Minute)))
	if v, ok := gauge(t, r.metrics, "posedge_hq_store_incomplete_manifests", "store_id", "S001"); !ok || v != 0 {
		t.Errorf("incomplete days of S001 after the right manifest = %v (reported %v), want 0", v, ok)
	}
}
