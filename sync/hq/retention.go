package hq

import (
	"fmt"
	"time"

	"github.com/posedge/posedge/sync/hqdb"
)

// StoreRetentionDays is how many days back a store can repair a day by
// itself when it has not said otherwise: its daily audit asks HQ again
// about the confirmed rows of every day its journal still holds and
// resends those HQ lacks (sync/replay, Config.AuditAllEvery), and the
// journal keeps a day journal.retention, 90 days by default. A store's
// heartbeat says its own journal.retention (journal_retention_days);
// posedge-hq judges each store by what it said, by this default before
// (docs/hq-sync.md, "Incomplete days repair themselves").
const StoreRetentionDays = 90

// Words of DayDiff.Repair.
const (
	repairSelf    = "repairing: the store resends by itself what HQ lacks of this day (its audit covers the last 7 days hourly and every day its journal holds daily)"
	repairPast    = "past retention: older than the %d days this store's journal keeps (journal.retention, as its last heartbeat said), so the store no longer holds the day and nothing resends it; the day stays incomplete"
	repairPastDef = "past retention: older than the 90 days a store's journal keeps by default (journal.retention; this store's heartbeat has not said its own), so the store most likely no longer holds the day and nothing resends it; if its journal.retention is longer, the store still repairs it by itself; otherwise the day stays incomplete"
)

// markRepair says, per store and day, whether an incomplete day is still
// inside the store's self-repair or past it: the store's own retention
// when its heartbeat said it (DayDiff.JournalRetentionDays), the default
// otherwise. A day is compared as the store's business day (YYYYMMDD)
// against now's UTC date: a few hours either side of midnight in far time
// zones are not told apart.
func markRepair(rep *hqdb.Report, now time.Time) {
	for i := range rep.Incomplete {
		d := &rep.Incomplete[i]
		days, words := StoreRetentionDays, repairPastDef
		if d.JournalRetentionDays > 0 {
			days, words = d.JournalRetentionDays, fmt.Sprintf(repairPast, d.JournalRetentionDays)
		}
		d.PastRetention = d.Date < now.UTC().AddDate(0, 0, -days).Format("20060102")
		d.Repair = repairSelf
		if d.PastRetention {
			d.Repair = words
		}
	}
}
