package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Row marks: the ledger's resumable repair (edge/ledger, ReapplyRecent)
// remembers how far it got as a journal row id, named together with that
// row's flow number so a mark from another journal (a new one, a restored
// backup whose row ids differ) is never taken for this one's.

// RowAtOrBefore is the highest row id at or below rowID and its flow
// number; 0 and "" when there is none.
func (j *Journal) RowAtOrBefore(ctx context.Context, rowID int64) (int64, string, error) {
	var id int64
	var flow string
	err := j.r.QueryRowContext(ctx, `SELECT rowid, flow_no FROM txns WHERE rowid <= ? ORDER BY rowid DESC LIMIT 1`, rowID).Scan(&id, &flow)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("read the journal row at or before %d: %w", rowID, err)
	}
	return id, flow, nil
}

// RowIDOf is the row id of a flow number; 0 when the journal lacks it.
func (j *Journal) RowIDOf(ctx context.Context, flowNo string) (int64, error) {
	var id int64
	err := j.r.QueryRowContext(ctx, `SELECT rowid FROM txns WHERE flow_no = ?`, flowNo).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the row id of %s: %w", flowNo, err)
	}
	return id, nil
}

// MinUnappliedRowID is the lowest row id of a transaction not yet applied
// to Redis; 0 when none waits.
func (j *Journal) MinUnappliedRowID(ctx context.Context) (int64, error) {
	var id sql.NullInt64
	if err := j.r.QueryRowContext(ctx, `SELECT MIN(rowid) FROM txns WHERE applied = 0`).Scan(&id); err != nil {
		return 0, fmt.Errorf("read the first unapplied row: %w", err)
	}
	return id.Int64, nil
}
