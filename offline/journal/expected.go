package journal

import (
	"context"
	"database/sql"
	"fmt"
)

// What Redis should hold, by the journal (the source of truth): the
// queries of the daily reconciliation of Redis's counters and stock.

// DayTotalsUpTo is DayTotalsByGroup restricted to what a Redis whose flow
// sequence stood at maxSeq can hold: normal-mode transactions numbered up
// to maxSeq and degraded-mode ones already applied. Sales journaled after
// a Redis snapshot then never count against it.
func (j *Journal) DayTotalsUpTo(ctx context.Context, day string, maxSeq int64) ([]DayRow, error) {
	return j.dayTotals(ctx, day, "AND applied = 1 AND seq <= ?", maxSeq)
}

// UnappliedDays lists the business days holding degraded-mode transactions
// Redis has not been given yet.
func (j *Journal) UnappliedDays(ctx context.Context) (map[string]bool, error) {
	rows, err := j.scan.QueryContext(ctx, `SELECT DISTINCT business_day FROM txns WHERE applied = 0`)
	if err != nil {
		return nil, fmt.Errorf("read unapplied days: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		out[d] = true
	}
	return out, rows.Err()
}

// ItemStock is the daemon's copy of an item with the stock the journal
// expects Redis to hold: the stock last set, minus what sales took, plus
// what refunds gave back and what stock adjustments changed since; with
// the catalog entry it last took (Revision 0: none, a local item).
type ItemStock struct {
	Item
	Expected int64
	Moves    int64 // transactions and adjustments touching the item since it was set

	Revision uint64 // of the catalog entry the item shows; 0: never from HQ's catalog
	Source   string // of that entry: store | all
}

// ExpectedStock computes every item's expected stock from the journal,
// counting transactions journaled after the item was last set that a
// Redis whose flow sequence stood at maxSeq holds (see DayTotalsUpTo),
// and the stock adjustments journaled since it was set. An adjustment
// changes Redis before it is journaled, so one in flight may be missing
// here: the reconciliation's second look settles that.
func (j *Journal) ExpectedStock(ctx context.Context, maxSeq int64) ([]ItemStock, error) {
	moves := map[string][2]int64{}
	rows, err := j.scan.QueryContext(ctx, `SELECT l.barcode,
			SUM(CASE WHEN t.kind = 'refund' THEN -l.qty ELSE l.qty END), COUNT(*)
		FROM txn_lines l JOIN txns t ON t.flow_no = l.flow_no JOIN items i ON i.barcode = l.barcode
		WHERE t.journaled_at > i.updated_at AND t.applied = 1 AND t.seq <= ?
		GROUP BY l.barcode`, maxSeq)
	if err != nil {
		return nil, fmt.Errorf("sum stock moves: %w", err)
	}
	for rows.Next() {
		var b string
		var out, n int64
		if err := rows.Scan(&b, &out, &n); err != nil {
			rows.Close()
			return nil, err
		}
		moves[b] = [2]int64{out, n}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = j.scan.QueryContext(ctx, `SELECT a.barcode, SUM(a.delta), COUNT(*)
		FROM stock_adjustments a JOIN items i ON i.barcode = a.barcode
		WHERE a.created_at > i.updated_at GROUP BY a.barcode`)
	if err != nil {
		return nil, fmt.Errorf("sum stock adjustments: %w", err)
	}
	for rows.Next() {
		var b string
		var delta, n int64
		if err := rows.Scan(&b, &delta, &n); err != nil {
			rows.Close()
			return nil, err
		}
		m := moves[b]
		moves[b] = [2]int64{m[0] - delta, m[1] + n}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = j.scan.QueryContext(ctx, `SELECT i.barcode, i.name, i.price_cents, i.stock, i.updated_at,
			COALESCE(c.active, 1), COALESCE(c.revision, 0), COALESCE(c.source, '')
		FROM items i LEFT JOIN catalog c ON c.barcode = i.barcode ORDER BY i.barcode`)
	if err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	defer rows.Close()
	var items []ItemStock
	for rows.Next() {
		var it ItemStock
		var at string
		var rev int64
		if err := rows.Scan(&it.Barcode, &it.Name, &it.PriceCents, &it.Stock, &at, &it.Active, &rev, &it.Source); err != nil {
			return nil, err
		}
		it.UpdatedAt, it.Revision = parseTS(at), uint64(rev)
		m := moves[it.Barcode]
		it.Expected, it.Moves = it.Stock-m[0], m[1]
		items = append(items, it)
	}
	return items, rows.Err()
}

// StockMovesBetween is what transactions numbered in (afterSeq, upToSeq]
// took from each item's stock, as ExpectedStock counts them (refunds
// give back): an item's expected stock at afterSeq is its expected stock
// at upToSeq plus this. The reconciliation reads Redis's stock in
// chunks, each at its own sequence, and compares each against the
// journal at that sequence.
func (j *Journal) StockMovesBetween(ctx context.Context, afterSeq, upToSeq int64) (map[string]int64, error) {
	rows, err := j.scan.QueryContext(ctx, `SELECT l.barcode, SUM(CASE WHEN t.kind = 'refund' THEN -l.qty ELSE l.qty END)
		FROM txns t JOIN txn_lines l ON l.flow_no = t.flow_no JOIN items i ON i.barcode = l.barcode
		WHERE t.seq > ? AND t.seq <= ? AND t.journaled_at > i.updated_at AND t.applied = 1
		GROUP BY l.barcode`, afterSeq, upToSeq)
	if err != nil {
		return nil, fmt.Errorf("sum stock moves between sequences %d and %d: %w", afterSeq, upToSeq, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var b string
		var n int64
		if err := rows.Scan(&b, &n); err != nil {
			return nil, err
		}
		out[b] = n
	}
	return out, rows.Err()
}

// FirstBusinessDay is the earliest business day the journal holds a
// transaction of, or "".
func (j *Journal) FirstBusinessDay(ctx context.Context) (string, error) {
	var s sql.NullString
	if err := j.scan.QueryRowContext(ctx, `SELECT MIN(business_day) FROM txns`).Scan(&s); err != nil {
		return "", fmt.Errorf("read first business day: %w", err)
	}
	return s.String, nil
}

// ItemBarcodes lists the barcodes of the daemon's copy of the item master.
func (j *Journal) ItemBarcodes(ctx context.Context) ([]string, error) {
	rows, err := j.scan.QueryContext(ctx, `SELECT barcode FROM items ORDER BY barcode`)
	if err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
