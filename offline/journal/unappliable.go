package journal

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The values of txns.applied. A transaction Redis refused to apply for a
// reason other than an outage (a script error on bad data) is set aside
// as unappliable so it neither blocks the transactions behind it nor keeps
// the store degraded; an operator retries it (RetryUnappliable). Queries
// for applied = 0 (waiting) and applied = 1 (in Redis) leave it out.
const (
	appliedWaiting     = 0
	appliedDone        = 1
	appliedUnappliable = 2
)

// The table of unappliable transactions is created by the schema (CREATE
// TABLE IF NOT EXISTS), so opening a journal of an earlier version adds it;
// the applied column takes the new value 2 without a schema change.
const unappliableSchema = `
CREATE TABLE IF NOT EXISTS unappliable (
	flow_no TEXT PRIMARY KEY REFERENCES txns(flow_no) ON DELETE CASCADE,
	reason  TEXT NOT NULL,
	at      TEXT NOT NULL
);
`

// SetUnappliable sets aside a transaction Redis cannot apply, with the
// reason: one waiting for Redis (degraded mode), or one applied before
// that a failover lost and that cannot be applied again.
func (j *Journal) SetUnappliable(ctx context.Context, flowNo, reason string) error {
	return j.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(`UPDATE txns SET applied = ? WHERE flow_no = ? AND applied IN (?, ?)`,
			appliedUnappliable, flowNo, appliedWaiting, appliedDone)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("set %s aside: no such transaction, or set aside already", flowNo)
		}
		_, err = tx.Exec(`INSERT OR REPLACE INTO unappliable (flow_no, reason, at) VALUES (?,?,?)`, flowNo, reason, ts(j.opt.Now()))
		return err
	})
}

// UnappliableRow is one transaction Redis cannot apply (the unappliable
// table): not a QuarantinedRow, which is one HQ refused; the two are set
// aside for different reasons, shown and retried apart.
type UnappliableRow struct {
	FlowNo string    `json:"flow_no"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// Unappliable lists the transactions set aside as unappliable, oldest first.
func (j *Journal) Unappliable(ctx context.Context) ([]UnappliableRow, error) {
	rows, err := j.r.QueryContext(ctx, `SELECT flow_no, reason, at FROM unappliable ORDER BY at, flow_no`)
	if err != nil {
		return nil, fmt.Errorf("read unappliable transactions: %w", err)
	}
	defer rows.Close()
	var out []UnappliableRow
	for rows.Next() {
		var u UnappliableRow
		var at string
		if err := rows.Scan(&u.FlowNo, &u.Reason, &at); err != nil {
			return nil, err
		}
		u.At = parseTS(at)
		out = append(out, u)
	}
	return out, rows.Err()
}

// RetryUnappliable puts unappliable transactions (all when none are
// named) back among those waiting for Redis; it returns how many moved.
func (j *Journal) RetryUnappliable(ctx context.Context, flowNos ...string) (int, error) {
	n := 0
	err := j.write(ctx, func(tx *sql.Tx) error {
		fs, err := flowsIn(tx, "unappliable", flowNos)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if _, err := tx.Exec(`UPDATE txns SET applied = ? WHERE flow_no = ? AND applied = ?`, appliedWaiting, f, appliedUnappliable); err != nil {
				return err
			}
			if _, err := tx.Exec(`DELETE FROM unappliable WHERE flow_no = ?`, f); err != nil {
				return err
			}
		}
		n = len(fs)
		return nil
	})
	return n, err
}
