package hq

import (
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
