package hq_test

import (
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// The fleet gauges of posedge-hq's /metrics carry each store's own
// figures: S001's heartbeat (clock 3 s ahead, 7 unsent, the oldest an
// hour old), S002 silent without a heartbeat (no clock or heartbeat-age
// series: absent, never a 0 that would read as "in sync").
func TestFleetMetrics(t *testing.T) {
	s := openStore(t, "sqlite://"+filepath.Join(t.TempDir(), "hq.db"), hqdb.StoreOptions{SilentAfter: 10 * time.Minute})
	now := time.Now().UTC()
	insert(t, s, sale{store: "S001", flow: "1", cents: 100, created: now}.msg(t, now))
	insert(t, s, heartbeatMsg(t, wire.Heartbeat{StoreID: "S001", SentAt: now.Add(3 * time.Second).Format(time.RFC3339Nano),
		Backlog: 7, OldestUnsent: now.Add(-time.Hour).Format(time.RFC3339Nano), Version: "v1", HeartbeatFormat: wire.HeartbeatFormat2}, now))
	insert(t, s, sale{store: "S002", flow: "1", cents: 50, created: now.Add(-time.Hour)}.msg(t, now.Add(-time.Hour)))

	fams, err := hq.NewMetrics(s, "test", testLogger(t)).Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{} // name → store → value
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "store_id" {
					if got[f.GetName()] == nil {
						got[f.GetName()] = map[string]float64{}
					}
					got[f.GetName()][l.GetValue()] = fleetGauge(m)
				}
			}
		}
	}
	near := func(name, store string, want, tol float64) {
		t.Helper()
		v, ok := got[name][store]
		if !ok || v < want-tol || v > want+tol {
			t.Errorf("%s{store_id=%q} = %v (present %v), want %v±%v", name, store, v, ok, want, tol)
		}
	}
	near("posedge_hq_store_clock_offset_seconds", "S001", 3, 0.01)
	near("posedge_hq_store_backlog", "S001", 7, 0)
	near("posedge_hq_store_oldest_unsent_age_seconds", "S001", 3600, 60)
	near("posedge_hq_store_heartbeat_age_seconds", "S001", 0, 60)
	near("posedge_hq_store_silent", "S001", 0, 0)
	near("posedge_hq_store_silent", "S002", 1, 0)
	near("posedge_hq_store_backlog", "S002", 0, 0)
	near("posedge_hq_store_oldest_unsent_age_seconds", "S002", 0, 0)
	for _, name := range []string{"posedge_hq_store_clock_offset_seconds", "posedge_hq_store_heartbeat_age_seconds"} {
		if _, ok := got[name]["S002"]; ok {
			t.Errorf("%s has a series for S002, which never sent a heartbeat", name)
		}
	}
}

func fleetGauge(m *dto.Metric) float64 {
	if m.Gauge != nil {
		return m.Gauge.GetValue()
	}
	return m.GetCounter().GetValue()
}
