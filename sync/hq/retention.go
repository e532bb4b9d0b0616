package hq

import (
	"time"

	"github.com/posedge/posedge/sync/hqdb"
)

// StoreRetentionDays is how many days back a store can repair a day by
// itself: its daily audit asks HQ again about the confirmed rows of every
// day its journal still holds and resends those HQ lacks (sync/replay,
// Config.AuditAllEvery), and the journal keeps a day journal.retention, 90
// days by default. HQ does not know each store's journal.retention, so
// it says past retention by the default (docs/hq-sync.md, "Incomplete
// days repair themselves").
const StoreRetentionDays = 90

// Words of DayDiff.Repair.
const (
	repairSelf = "repairing: the store resends by itself what HQ lacks of this day (its audit covers the last 7 days hourly and every day its journal holds daily, journal.retention: 90 days by default)"
	repairPast = "past retention: older than the 90 days a store's journal keeps by default (journal.retention), so the store most likely no longer holds the day and nothing resends it; if its journal.retention is longer, the store still repairs it by itself; otherwise the day stays incomplete"
)

// markRepair says, per store and day, whether an incomplete day is still
// inside the stores' self-repair or past it. A day is compared as the
// store's business day (YYYYMMDD) against now's UTC date: a few hours
// either side of midnight in far time zones are not told apart.
func markRepair(rep *hqdb.Report, now time.Time) {
	oldest := now.UTC().AddDate(0, 0, -StoreRetentionDays).Format("20060102")
	for i := range rep.Incomplete {
		d := &rep.Incomplete[i]
		d.PastRetention = d.Date < oldest
		d.Repair = repairSelf
		if d.PastRetention {
			d.Repair = repairPast
		}
	}
}
