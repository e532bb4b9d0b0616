package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Stock adjustments (contract §6): relative stock changes made at the
// store, journaled once per idempotency key and sent to HQ like sales.

const adjustmentsSchema = `
CREATE TABLE IF NOT EXISTS stock_adjustments (
	adjustment_id TEXT PRIMARY KEY,
	idem_key      TEXT NOT NULL UNIQUE,
	fingerprint   TEXT NOT NULL,
	barcode       TEXT NOT NULL,
	delta         INTEGER NOT NULL,
	reason        TEXT NOT NULL,
	stock         INTEGER NOT NULL,
	created_at    TEXT NOT NULL,
	body          BLOB NOT NULL,
	state         TEXT NOT NULL DEFAULT 'pending',
	acked_at      TEXT
);
CREATE INDEX IF NOT EXISTS stock_adjustments_outbox ON stock_adjustments(state) WHERE state = 'pending';
`

// Adjustment is one journaled stock adjustment.
type Adjustment struct {
	AdjustmentID string
	IdemKey      string
	Fingerprint  string
	Barcode      string
	Delta        int64
	Reason       string
	Stock        int64 // after the adjustment
	CreatedAt    time.Time
	Body         []byte // what HQ stores and the answer's source
}

// AppendAdjustment journals an adjustment; ErrDuplicateKey when its
// idempotency key is already journaled.
func (j *Journal) AppendAdjustment(ctx context.Context, a Adjustment) error {
	err := j.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO stock_adjustments (adjustment_id, idem_key, fingerprint, barcode, delta, reason, stock, created_at, body)
			VALUES (?,?,?,?,?,?,?,?,?)`, a.AdjustmentID, a.IdemKey, a.Fingerprint, a.Barcode, a.Delta, a.Reason, a.Stock, ts(a.CreatedAt), a.Body)
		return err
	})
	if errors.Is(err, ErrDuplicateFlow) || errors.Is(err, ErrDuplicateKey) {
		// classify names any unique violation of this table by its column.
		return fmt.Errorf("%w: adjustment %s", ErrDuplicateKey, a.IdemKey)
	}
	return err
}

const adjustmentCols = `adjustment_id, idem_key, fingerprint, barcode, delta, reason, stock, created_at, body`

func scanAdjustment(sc interface{ Scan(...any) error }) (Adjustment, error) {
	var a Adjustment
	var at string
	err := sc.Scan(&a.AdjustmentID, &a.IdemKey, &a.Fingerprint, &a.Barcode, &a.Delta, &a.Reason, &a.Stock, &at, &a.Body)
	a.CreatedAt = parseTS(at)
	return a, err
}

// AdjustmentByKey is the adjustment journaled under an idempotency key,
// or nil.
func (j *Journal) AdjustmentByKey(ctx context.Context, key string) (*Adjustment, error) {
	a, err := scanAdjustment(j.r.QueryRowContext(ctx, `SELECT `+adjustmentCols+` FROM stock_adjustments WHERE idem_key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read stock adjustment %s: %w", key, err)
	}
	return &a, nil
}

// PendingAdjustments are up to limit adjustments HQ has not acknowledged,
// oldest first.
func (j *Journal) PendingAdjustments(ctx context.Context, limit int) ([]Adjustment, error) {
	rows, err := j.r.QueryContext(ctx, `SELECT `+adjustmentCols+` FROM stock_adjustments WHERE state = 'pending'
		ORDER BY created_at, adjustment_id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("read pending stock adjustments: %w", err)
	}
	defer rows.Close()
	var out []Adjustment
	for rows.Next() {
		a, err := scanAdjustment(rows)
		if err != nil {
			return nil, fmt.Errorf("read pending stock adjustments: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AckAdjustments marks adjustments acknowledged by HQ.
func (j *Journal) AckAdjustments(ctx context.Context, ids []string, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	return j.write(ctx, func(tx *sql.Tx) error {
		args := []any{ts(at)}
		for _, id := range ids {
			args = append(args, id)
		}
		_, err := tx.Exec(`UPDATE stock_adjustments SET state = 'acked', acked_at = ? WHERE adjustment_id IN (?`+
			strings.Repeat(",?", len(ids)-1)+`)`, args...)
		return err
	})
}
