package hq

import (
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hqdb"
)

// TestAssembleFleet: offsets, silent and incomplete days per store.
func TestAssembleFleet(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	rows := []hqdb.FleetRow{
		{StoreID: "a", LastSeenAt: now.Add(-time.Minute), HBSentAt: now.Add(-50 * time.Second), HBReceivedAt: now.Add(-time.Minute), OldestUnsent: "2026-12-01T11:00:00Z"},
		{StoreID: "b", LastSeenAt: now.Add(-10 * time.Minute)},
	}
	rep := hqdb.Report{Incomplete: []hqdb.DayDiff{{StoreID: "b"}, {StoreID: "b"}}}
	es := hqdb.AssembleFleet(rows, rep, now, 5*time.Minute)
	tests := []struct {
		name      string
		got, want any
	}{
		{"a offset", es[0].ClockOffsetMS, int64(10000)},
		{"a silent", es[0].Silent, false},
		{"a heartbeat", es[0].HasHeartbeat, true},
		{"a oldest", es[0].OldestUnsentAt.Equal(time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)), true},
		{"b silent", es[1].Silent, true},
		{"b incomplete", es[1].IncompleteDays, int64(2)},
		{"b heartbeat", es[1].HasHeartbeat, false},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
