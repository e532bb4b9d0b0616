package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Queries for the daily reconciliation (Redis counters and stock against
// the journal), the flow-number continuity check and retention pruning.

// Meta keys the journal keeps for those jobs.
const (
	MetaPrunedMaxSeq  = "pruned_max_seq"     // highest sequence number pruning ever deleted
	MetaGapCheckedSeq = "flowgap_checked"    // continuity checked up to this sequence number
	MetaReconcileFrom = "reconcile_from_day" // first business day the journal holds whole
)

// Meta reads a value the journal keeps about itself; ok is false when unset.
func (j *Journal) Meta(ctx context.Context, k string) (v string, ok bool, err error) {
	err = j.r.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = ?`, k).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read journal meta %s: %w", k, err)
	}
	return v, true, nil
}

// MetaInt reads an integer meta value; 0 when unset.
func (j *Journal) MetaInt(ctx context.Context, k string) (int64, error) {
	v, ok, err := j.Meta(ctx, k)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("journal meta %s: %q is not a number", k, v)
	}
	return n, nil
}

// SetMeta stores a value the journal keeps about itself.
func (j *Journal) SetMeta(ctx context.Context, k, v string) error {
	return j.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`, k, v)
		return err
	})
}

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
	rows, err := j.r.QueryContext(ctx, `SELECT DISTINCT business_day FROM txns WHERE applied = 0`)
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

// ItemStock is the daemon's copy of an item with the stock the journal
// expects Redis to hold: the stock last set, minus what sales took and
// plus what refunds gave back since.
type ItemStock struct {
	Item
	Expected int64
	Moves    int64 // transactions touching the item since it was set
}

// ExpectedStock computes every item's expected stock from the journal,
// counting transactions journaled after the item was last set that a
// Redis whose flow sequence stood at maxSeq holds (see DayTotalsUpTo).
func (j *Journal) ExpectedStock(ctx context.Context, maxSeq int64) ([]ItemStock, error) {
	moves := map[string][2]int64{}
	rows, err := j.r.QueryContext(ctx, `SELECT l.barcode,
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
	rows, err = j.r.QueryContext(ctx, `SELECT barcode, name, price_cents, stock, updated_at FROM items ORDER BY barcode`)
	if err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	defer rows.Close()
	var items []ItemStock
	for rows.Next() {
		var it ItemStock
		var at string
		if err := rows.Scan(&it.Barcode, &it.Name, &it.PriceCents, &it.Stock, &at); err != nil {
			return nil, err
		}
		it.UpdatedAt = parseTS(at)
		m := moves[it.Barcode]
		it.Expected, it.Moves = it.Stock-m[0], m[1]
		items = append(items, it)
	}
	return items, rows.Err()
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

// FirstBusinessDay is the earliest business day the journal holds a
// transaction of, or "".
func (j *Journal) FirstBusinessDay(ctx context.Context) (string, error) {
	var s sql.NullString
	if err := j.r.QueryRowContext(ctx, `SELECT MIN(business_day) FROM txns`).Scan(&s); err != nil {
		return "", fmt.Errorf("read first business day: %w", err)
	}
	return s.String, nil
}

// ItemBarcodes lists the barcodes of the daemon's copy of the item master.
func (j *Journal) ItemBarcodes(ctx context.Context) ([]string, error) {
	rows, err := j.r.QueryContext(ctx, `SELECT barcode FROM items ORDER BY barcode`)
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
