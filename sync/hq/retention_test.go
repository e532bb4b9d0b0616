package hq

import (
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hqdb"
)

// TestMarkRepairSaysPastRetention: an incomplete day inside the stores'
// 7-day audit is said to repair itself; an older one is said, in words,
// to be past retention, per store and day.
func TestMarkRepairSaysPastRetention(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		date string
		past bool
	}{
		{"20261202", false}, // today
		{"20261125", false}, // exactly 7 days back: still audited
		{"20261124", true},
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
