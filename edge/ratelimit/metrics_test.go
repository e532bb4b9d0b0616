package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metricValue is the value of the series of name with exactly labels
// (a histogram gives its sample count); -1 when there is none.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue series
				}
			}
			return value(m)
		}
	}
	return -1
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

func TestMetrics(t *testing.T) {
	_, rdb := startRedis(t)
	cfg := testConfig()
	cfg.Actions[ActionPay] = Policy{2, time.Minute}
	cfg.Actions[ActionSync] = Policy{1, time.Minute}
	reg := prometheus.NewRegistry()
	l := newTestLimiter(t, rdb, cfg, reg)
	for i := 0; i < 3; i++ {
		mustAllow(t, l, "T01", ActionPay)
	}
	mustAllow(t, l, "T01", "")
	for i := 0; i < 2; i++ {
		if _, err := l.AllowStoreSync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	dec := func(level, action, decision string) map[string]string {
		return map[string]string{"level": level, "action": action, "decision": decision}
	}
	near := func(level, action string) map[string]string {
		return map[string]string{"level": level, "action": action}
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"posedge_ratelimit_decisions_total", dec("action", "pay", "allowed"), 2},
		{"posedge_ratelimit_decisions_total", dec("action", "pay", "denied"), 1},
		{"posedge_ratelimit_decisions_total", dec("terminal", "none", "allowed"), 1},
		{"posedge_ratelimit_decisions_total", dec("terminal", "scan", "denied"), 0}, // present from the start
		{"posedge_ratelimit_decisions_total", dec("store_sync", "sync", "allowed"), 1},
		{"posedge_ratelimit_decisions_total", dec("store_sync", "sync", "denied"), 1},
		{"posedge_ratelimit_near_limit_total", near("action", "pay"), 2}, // remaining 0 of 2, twice
		{"posedge_ratelimit_near_limit_total", near("terminal", "none"), 0},
		{"posedge_ratelimit_near_limit_total", near("store_sync", "sync"), 2},
		{"posedge_ratelimit_decision_seconds", nil, 6},
		{"posedge_ratelimit_fallback_active", nil, 0},
	}
	for _, tt := range tests {
		if got := metricValue(t, reg, tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
	if _, err := New(rdb, cfg, nil, reg); err == nil {
		t.Error("a second limiter registered the same metrics on one registry")
	}
}
