package hq_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"

	"github.com/posedge/posedge/internal/testenv/golden"
)

// The table an HQ engineer reads: worst first (silent, incomplete,
// conflicting, old version, clock off, then the healthy ones by ID), each
// store's problems named, the verdict on the first line.
func TestRenderFleetGolden(t *testing.T) {
	now := time.Date(2026, 5, 20, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	hb := func(e hqdb.StoreEntry, offsetMS int64) hqdb.StoreEntry {
		e.HasHeartbeat, e.ClockOffsetMS, e.LastHeartbeatAt = true, offsetMS, e.LastReceivedAt
		return e
	}
	fleet := []hqdb.StoreEntry{
		hb(hqdb.StoreEntry{StoreID: "S001", Version: "v1.10.0", LastReceivedAt: ago(20 * time.Second), Transactions: 1200}, 120),
		hb(hqdb.StoreEntry{StoreID: "S002", Version: "v1.9.3", LastReceivedAt: ago(30 * time.Second), Transactions: 900}, -40),
		hb(hqdb.StoreEntry{StoreID: "S003", Version: "v1.10.0", LastReceivedAt: ago(3 * time.Hour), Transactions: 15,
			Backlog: 4210, OldestUnsentAt: ago(27 * time.Hour), Silent: true}, 300),
		hb(hqdb.StoreEntry{StoreID: "S004", Version: "v1.10.0", LastReceivedAt: ago(10 * time.Second), Transactions: 77,
			IncompleteDays: 2, Quarantined: 1}, 0),
		hb(hqdb.StoreEntry{StoreID: "S005", Version: "v1.10.0", LastReceivedAt: ago(5 * time.Second), Transactions: 50, Conflicts: 3}, 10),
		hb(hqdb.StoreEntry{StoreID: "S006", Version: "v1.10.0", LastReceivedAt: ago(5 * time.Second), Transactions: 51}, -7250),
		{StoreID: "S007", LastReceivedAt: ago(40 * 24 * time.Hour), Transactions: 3, Silent: true},
	}
	ls := hq.JudgeFleet(fleet)
	var b bytes.Buffer
	if err := hq.RenderFleet(&b, ls, now); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "stores.golden"), b.Bytes())
	if hq.FleetOK(ls) {
		t.Error("FleetOK with silent, incomplete and conflicting stores")
	}
}

// The verdict of contract §7: only silent, incomplete or conflicting
// stores fail the check; an old version or an off clock is shown but
// passes (their alerts page separately).
func TestFleetOK(t *testing.T) {
	ok := hqdb.StoreEntry{StoreID: "S1", Version: "1.2.0", HasHeartbeat: true}
	tests := []struct {
		name  string
		entry func(hqdb.StoreEntry) hqdb.StoreEntry
		want  bool
	}{
		{"healthy", func(e hqdb.StoreEntry) hqdb.StoreEntry { return e }, true},
		{"silent", func(e hqdb.StoreEntry) hqdb.StoreEntry { e.Silent = true; return e }, false},
		{"incomplete", func(e hqdb.StoreEntry) hqdb.StoreEntry { e.IncompleteDays = 1; return e }, false},
		{"conflicts", func(e hqdb.StoreEntry) hqdb.StoreEntry { e.Conflicts = 1; return e }, false},
		{"old version", func(e hqdb.StoreEntry) hqdb.StoreEntry { e.Version = "1.1.9"; return e }, true},
		{"clock off", func(e hqdb.StoreEntry) hqdb.StoreEntry { e.ClockOffsetMS = -6000; return e }, true},
		{"quarantined only", func(e hqdb.StoreEntry) hqdb.StoreEntry { e.Quarantined = 2; return e }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newest := hqdb.StoreEntry{StoreID: "S0", Version: "1.2.0", HasHeartbeat: true}
			if got := hq.FleetOK(hq.JudgeFleet([]hqdb.StoreEntry{newest, tc.entry(ok)})); got != tc.want {
				t.Errorf("FleetOK = %v, want %v", got, tc.want)
			}
		})
	}
	if !hq.FleetOK(nil) {
		t.Error("an empty fleet fails the check")
	}
}

// Versions order by number, not text: v1.10.0 is newer than v1.9.3, a
// release newer than its release candidate.
func TestOldVersion(t *testing.T) {
	tests := []struct {
		old, newest string
	}{
		{"v1.9.3", "v1.10.0"},
		{"1.2.0-rc1", "1.2.0"},
		{"1.2", "1.2.1"},
		{"dev", "0.0.1"},
	}
	for _, tc := range tests {
		ls := hq.JudgeFleet([]hqdb.StoreEntry{{StoreID: "A", Version: tc.newest}, {StoreID: "B", Version: tc.old}})
		if ls[0].StoreID != "B" || len(ls[0].Problems) != 1 || ls[0].Problems[0] != "old version" || len(ls[1].Problems) != 0 {
			t.Errorf("%s vs %s: %+v", tc.old, tc.newest, ls)
		}
	}
}
