package journal

import (
	"context"
	"fmt"
)

// TerminalDay is what one terminal journaled on one business day: the
// figures of the end-of-day manifest HQ checks its own copy against.
type TerminalDay struct {
	TerminalID  string
	Sales       int64
	SalesCents  int64
	Refunds     int64
	RefundCents int64
	FirstFlowNo string
	LastFlowNo  string
}

// DayTotals sums, per terminal, the sales and refunds journaled for a
// business day (YYYYMMDD), whatever their state on the way to HQ. Rows
// removed by Prune are no longer counted, so ask only about days within
// the journal's retention.
func (j *Journal) DayTotals(ctx context.Context, day string) ([]TerminalDay, error) {
	rows, err := j.scan.QueryContext(ctx, `SELECT terminal_id,
		COALESCE(SUM(kind = 'sale'), 0),
		COALESCE(SUM(CASE WHEN kind = 'sale' THEN total_cents ELSE 0 END), 0),
		COALESCE(SUM(kind = 'refund'), 0),
		COALESCE(SUM(CASE WHEN kind = 'refund' THEN total_cents ELSE 0 END), 0),
		MIN(flow_no), MAX(flow_no)
		FROM txns WHERE business_day = ? GROUP BY terminal_id ORDER BY terminal_id`, day)
	if err != nil {
		return nil, fmt.Errorf("read totals of day %s: %w", day, err)
	}
	defer rows.Close()
	var out []TerminalDay
	for rows.Next() {
		var d TerminalDay
		if err := rows.Scan(&d.TerminalID, &d.Sales, &d.SalesCents, &d.Refunds, &d.RefundCents,
			&d.FirstFlowNo, &d.LastFlowNo); err != nil {
			return nil, fmt.Errorf("read totals of day %s: %w", day, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read totals of day %s: %w", day, err)
	}
	return out, nil
}
