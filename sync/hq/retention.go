package hq

import (
	"time"

	"github.com/posedge/posedge/sync/hqdb"
)

// StoreAuditDays is how many business days back a store asks HQ again
// about the rows it had confirmed and resends those HQ lacks (sync/replay
// Config.AuditDays, default 7): an incomplete day inside it repairs
// itself; an older one does not (docs/hq-sync.md, "Incomplete days
// repair themselves").
const StoreAuditDays = 7

// Words of DayDiff.Repair.
const (
	repairSelf = "repairing: the store resends by itself what HQ lacks of this day (its hourly audit covers the last 7 business days)"
	repairPast = "past retention: older than the 7 business days the store audits, so nothing resends it without a person; resend it by hand from the store's journal while the store still keeps the day (journal.retention), or the day stays incomplete"
)

// markRepair says, per store and day, whether an incomplete day is still
// inside the stores' self-repair or past it. A day is compared as the
// store's business day (YYYYMMDD) against now's UTC date: a few hours
// either side of midnight in far time zones are not told apart.
func markRepair(rep *hqdb.Report, now time.Time) {
	oldest := now.UTC().AddDate(0, 0, -StoreAuditDays).Format("20060102")
	for i := range rep.Incomplete {
		d := &rep.Incomplete[i]
		d.PastRetention = d.Date < oldest
		d.Repair = repairSelf
		if d.PastRetention {
			d.Repair = repairPast
		}
	}
}
