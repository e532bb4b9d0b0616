package hqdb

import (
	"encoding/json"
	"time"
)

// Rows is the part of a result set the shared scanners use; both
// database/sql's *sql.Rows and pgx.Rows have it. The caller closes the
// rows: database/sql and pgx close them differently.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// TimeColumn is one timestamp column as a driver hands it back: SQLite
// through database/sql gives text, pgx gives a time.Time.
type TimeColumn interface {
	// Dest is what Scan writes the column into.
	Dest() any
	// Time is what was scanned, in UTC; zero for NULL.
	Time() time.Time
}

// Scanner reads the rows of the SELECTs both backends share, column for
// column, so that only the decoding of a timestamp differs by driver.
type Scanner struct {
	// Time makes the destination of one timestamp column.
	Time func() TimeColumn
}

// scanAll reads every row with one, then the driver's error: always a
// non-nil slice, so that an empty list is written as [] in JSON.
func scanAll[T any](rows Rows, one func() (T, error)) ([]T, error) {
	out := []T{}
	for rows.Next() {
		v, err := one()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Fleet reads the rows of FleetSelect.
func (sc Scanner) Fleet(rows Rows) ([]FleetRow, error) {
	return scanAll(rows, func() (FleetRow, error) {
		var r FleetRow
		seen, sent, recv := sc.Time(), sc.Time(), sc.Time()
		if err := rows.Scan(&r.StoreID, &r.Transactions, seen.Dest(), &r.Version, sent.Dest(), recv.Dest(),
			&r.Backlog, &r.OldestUnsent, &r.Conflicts, &r.Quarantined); err != nil {
			return r, err
		}
		r.LastSeenAt = seen.Time()
		// A store with no heartbeat has neither time (LEFT JOIN).
		if s, h := sent.Time(), recv.Time(); !s.IsZero() && !h.IsZero() {
			r.HBSentAt, r.HBReceivedAt = s, h
		}
		return r, nil
	})
}

// Watermarks reads the rows of WatermarksSelect.
func (sc Scanner) Watermarks(rows Rows) ([]Watermark, error) {
	return scanAll(rows, func() (Watermark, error) {
		var w Watermark
		created, received, seen := sc.Time(), sc.Time(), sc.Time()
		if err := rows.Scan(&w.StoreID, &w.Count, &w.MaxFlowNo, created.Dest(), received.Dest(), seen.Dest()); err != nil {
			return w, err
		}
		w.LastCreatedAt, w.LastReceivedAt, w.LastSeenAt = created.Time(), received.Time(), seen.Time()
		return w, nil
	})
}

// Quarantine reads rows of store_id, flow_no, reason, detail, body (as
// text), received_at.
func (sc Scanner) Quarantine(rows Rows) ([]StoredQuarantine, error) {
	return scanAll(rows, func() (StoredQuarantine, error) {
		var q StoredQuarantine
		var body string
		received := sc.Time()
		if err := rows.Scan(&q.StoreID, &q.FlowNo, &q.Reason, &q.Detail, &body, received.Dest()); err != nil {
			return q, err
		}
		q.Body, q.ReceivedAt = json.RawMessage(body), received.Time()
		return q, nil
	})
}

// Conflicts reads rows of store_id, flow_no, body (as text), received_at.
func (sc Scanner) Conflicts(rows Rows) ([]StoredConflict, error) {
	return scanAll(rows, func() (StoredConflict, error) {
		var c StoredConflict
		var body string
		received := sc.Time()
		if err := rows.Scan(&c.StoreID, &c.FlowNo, &body, received.Dest()); err != nil {
			return c, err
		}
		c.Body, c.ReceivedAt = json.RawMessage(body), received.Time()
		return c, nil
	})
}

// Adjustments reads rows of store_id, adjustment_id, barcode, delta,
// reason, created_at, body (as text).
func (sc Scanner) Adjustments(rows Rows) ([]StoredAdjustment, error) {
	return scanAll(rows, func() (StoredAdjustment, error) {
		var a StoredAdjustment
		var body string
		created := sc.Time()
		if err := rows.Scan(&a.StoreID, &a.AdjustmentID, &a.Barcode, &a.Delta, &a.Reason, created.Dest(), &body); err != nil {
			return a, err
		}
		a.CreatedAt, a.Body = created.Time(), json.RawMessage(body)
		return a, nil
	})
}

// Days reads the rows of CompletenessSelect.
func (sc Scanner) Days(rows Rows) ([]DayDiff, error) {
	return scanAll(rows, func() (DayDiff, error) {
		var d DayDiff
		err := rows.Scan(&d.StoreID, &d.TerminalID, &d.Date,
			&d.Manifest.Sales, &d.Manifest.SalesCents, &d.Manifest.Refunds, &d.Manifest.RefundCents,
			&d.Stored.Sales, &d.Stored.SalesCents, &d.Stored.Refunds, &d.Stored.RefundCents)
		return d, err
	})
}

// Silent reads rows of store_id, last_seen_at as the stores silent at now.
func (sc Scanner) Silent(rows Rows, now time.Time) ([]SilentStore, error) {
	return scanAll(rows, func() (SilentStore, error) {
		var id string
		seen := sc.Time()
		if err := rows.Scan(&id, seen.Dest()); err != nil {
			return SilentStore{}, err
		}
		return Silent(id, seen.Time(), now), nil
	})
}

// FlowNos adds the flow_no of each row to held.
func (sc Scanner) FlowNos(rows Rows, held map[string]bool) error {
	fs, err := scanAll(rows, func() (string, error) {
		var f string
		err := rows.Scan(&f)
		return f, err
	})
	for _, f := range fs {
		held[f] = true
	}
	return err
}
