package health

import (
	"context"
	"time"

	"github.com/posedge/posedge/offline/diskspace"
	"github.com/posedge/posedge/offline/journal"
)

// ReadJournal reads the journal's figures and the free space of its disk,
// and fills the backlog part of hq from them. The daemon calls it for
// each status, the status command when the daemon is down: one gathering
// for both.
func ReadJournal(ctx context.Context, j *journal.Journal, hq HQ) (Journal, HQ) {
	jf := Journal{SeenAt: time.Now(), Path: j.Path(), DiskFree: -1}
	if free, err := diskspace.Free(j.Path()); err == nil {
		jf.DiskFree = free
	}
	if err := j.Damaged(); err != nil {
		// Found by the background quick_check: the figures of a damaged
		// file are not to be trusted, the finding is what matters.
		jf.Error, jf.Damaged = err.Error(), true
		return jf, hq
	}
	// The last ack's time costs a read of every acknowledged row; the
	// running daemon's replayer knows it already (LastSyncAt).
	st, err := j.BacklogStats(ctx)
	if err == nil && hq.LastSyncAt == nil {
		st.LastAckedAt, err = j.LastAckedAt(ctx)
	}
	if err != nil {
		jf.Error = err.Error()
		return jf, hq
	}
	jf.SizeBytes, jf.Rows, jf.Quarantined, jf.Unapplied, jf.MaxFlowNo = st.SizeBytes, st.Rows, st.Quarantined, st.Unapplied, st.MaxFlowNo
	if st.Unappliable > 0 {
		if rows, err := j.Unappliable(ctx); err == nil {
			for _, r := range rows {
				jf.Unappliable = append(jf.Unappliable, r.FlowNo)
			}
		}
	}
	hq.Backlog, hq.BacklogBytes, hq.OldestUnsynced = st.Backlog, st.BacklogBytes, st.OldestUnsent
	hq.Unconfirmed, hq.OldestUnconfirmedAck = st.Unconfirmed, st.OldestUnconfirmedAck
	if hq.LastSyncAt == nil {
		hq.LastSyncAt = st.LastAckedAt
	}
	return jf, hq
}

// ReadCatalog is what the journal says of the catalog while the daemon is
// down: the revision applied through and when, not watching. nil when
// the journal cannot tell.
func ReadCatalog(ctx context.Context, j *journal.Journal) *Catalog {
	if !j.CatalogInitialised() {
		return &Catalog{NotInitialised: true}
	}
	rev, _, at, err := j.CatalogMark(ctx)
	if err != nil {
		return nil
	}
	f := &Catalog{SeenAt: time.Now(), Revision: rev}
	if !at.IsZero() {
		f.AppliedAt = &at
	}
	return f
}
