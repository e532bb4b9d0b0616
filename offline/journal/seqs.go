package journal

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The flow sequence numbers the journal holds: the queries of the
// flow-number continuity check and of the reconciliation's settling.

// MissingSeqs counts the sequence numbers in (lo, hi] the journal does not
// hold among its most recent rows (by rowid, a window several times
// hi−lo wide): meant for the last few hundred numbers, it stays cheap on
// a journal of months.
func (j *Journal) MissingSeqs(ctx context.Context, lo, hi int64) (int64, error) {
	if hi <= lo {
		return 0, nil
	}
	var n int64
	if err := j.r.QueryRowContext(ctx, `SELECT COUNT(DISTINCT seq) FROM txns
		WHERE rowid > (SELECT COALESCE(MAX(rowid), 0) FROM txns) - ? AND seq > ? AND seq <= ?`,
		4*(hi-lo)+1000, lo, hi).Scan(&n); err != nil {
		return 0, fmt.Errorf("count sequence numbers: %w", err)
	}
	return hi - lo - n, nil
}

// MaxSeqJournaledBefore is the highest sequence number journaled before t
// (0 when none).
func (j *Journal) MaxSeqJournaledBefore(ctx context.Context, t time.Time) (int64, error) {
	var n sql.NullInt64
	if err := j.r.QueryRowContext(ctx, `SELECT MAX(seq) FROM txns WHERE journaled_at < ?`, ts(t)).Scan(&n); err != nil {
		return 0, fmt.Errorf("read settled sequence: %w", err)
	}
	return n.Int64, nil
}

// MinSeq is the lowest sequence number the journal holds (0 when none).
func (j *Journal) MinSeq(ctx context.Context) (int64, error) {
	var n sql.NullInt64
	if err := j.r.QueryRowContext(ctx, `SELECT MIN(seq) FROM txns WHERE seq > 0`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read min sequence: %w", err)
	}
	return n.Int64, nil
}

// SeqGap is a run of sequence numbers the journal lacks: From to To
// inclusive.
type SeqGap struct{ From, To int64 }

// SeqGaps lists the runs of sequence numbers missing in (lo, hi], taking
// lo as present.
func (j *Journal) SeqGaps(ctx context.Context, lo, hi int64) ([]SeqGap, error) {
	rows, err := j.r.QueryContext(ctx, `SELECT DISTINCT seq FROM txns WHERE seq > ? AND seq <= ? ORDER BY seq`, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("read sequence numbers: %w", err)
	}
	defer rows.Close()
	var gaps []SeqGap
	prev := lo
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		if s > prev+1 {
			gaps = append(gaps, SeqGap{prev + 1, s - 1})
		}
		prev = s
	}
	return gaps, rows.Err()
}
