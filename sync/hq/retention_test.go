package hq

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hqdb"
)

// TestMarkRepairSaysPastRetention: an incomplete day inside the days a
// store's journal keeps (90 by default), all of which its audit covers,
// is said to repair itself; an older one is said, in words, to be past
// retention, per store and day.
func TestMarkRepairSaysPastRetention(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		date string
		past bool
	}{
		{"20261202", false}, // today
		{"20261124", false}, // 8 days back: audited too (it was not, before)
		{"20260903", false}, // exactly 90 days back: still in the journal
		{"20260902", true},
		{"20250101", true},
	}
	rep := hqdb.Report{}
	for _, c := range cases {
		rep.Incomplete = append(rep.Incomplete, hqdb.DayDiff{StoreID: "S042", TerminalID: "T01", Date: c.date})
	}
	markRepair(&rep, now)
	for i, c := range cases {
		d := rep.Incomplete[i]
		if d.PastRetention != c.past {
			t.Errorf("%s: past_retention %v, want %v", c.date, d.PastRetention, c.past)
		}
		if got := strings.HasPrefix(d.Repair, "past retention"); got != c.past {
			t.Errorf("%s: repair %q", c.date, d.Repair)
		}
	}
}

// TestMarkRepairByTheStoresOwnRetention: a store whose heartbeat said its
// journal keeps 30 days is judged by that, not by the 90-day default, and
// the words say the store's figure.
func TestMarkRepairByTheStoresOwnRetention(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		date string
		days int
		past bool
	}{
		{"20261102", 30, false}, // exactly 30 days back
		{"20261101", 30, true},
		{"20261101", 0, false}, // the store never said: 90 days
		{"20261101", 365, false},
		{"20251201", 365, true},
	}
	rep := hqdb.Report{}
	for _, c := range cases {
		rep.Incomplete = append(rep.Incomplete, hqdb.DayDiff{StoreID: "S042", TerminalID: "T01", Date: c.date, JournalRetentionDays: c.days})
	}
	markRepair(&rep, now)
	for i, c := range cases {
		d := rep.Incomplete[i]
		if d.PastRetention != c.past {
			t.Errorf("%s, %d days: past_retention %v, want %v", c.date, c.days, d.PastRetention, c.past)
		}
		if c.past && c.days > 0 && !strings.Contains(d.Repair, fmt.Sprintf("%d days this store's journal keeps", c.days)) {
			t.Errorf("%s: repair %q does not say the store's retention", c.date, d.Repair)
		}
	}
}
