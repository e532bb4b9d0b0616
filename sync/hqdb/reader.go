package hqdb

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/posedge/posedge/sync/wire"
)

// ClosingRows are rows a Query hands back: Rows and a Close that reports
// the driver's error (database/sql's *sql.Rows has it; a pgx backend
// wraps its rows).
type ClosingRows interface {
	Rows
	Close() error
}

// Reader answers the read half of Store the same way on every backend:
// the SQL text below is written once, with ? placeholders, and what
// differs by driver is the three fields. A backend embeds it.
type Reader struct {
	// Query runs one read query; a backend whose driver numbers its
	// placeholders rebinds q first (Rebind).
	Query func(ctx context.Context, q string, args ...any) (ClosingRows, error)
	// Scan decodes the driver's timestamp columns.
	Scan Scanner
	// TimeArg is a time as the driver takes it in a query.
	TimeArg func(time.Time) any
	// SilentAfter judges a store silent (StoreOptions.SilentAfter).
	SilentAfter time.Duration
}

// Rebind turns the ? placeholders of q into PostgreSQL's $1, $2, …: the
// shared SQL text is written once, in SQLite's spelling. q holds no ?
// inside a string literal.
func Rebind(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Write statements both backends run one row at a time, in SQLite's
// spelling (Rebind for PostgreSQL). Bodies go in as JSON text: a JSON
// column takes the text as it is (pgx sends a string parameter raw).
const (
	InsertConflictSQL = `INSERT INTO conflicts
		(store_id, flow_no, body_sha256, terminal_id, kind, total_cents, created_at, body, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	InsertQuarantineSQL = `INSERT INTO quarantine
		(store_id, flow_no, body_sha256, reason, detail, body, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`
	InsertAdjustmentSQL = `INSERT INTO stock_adjustments
		(store_id, adjustment_id, barcode, delta, reason, created_at, body, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (store_id, adjustment_id) DO NOTHING`
	// A manifest or heartbeat replaces the stored one only when sent later.
	UpsertManifestSQL = `INSERT INTO manifests
		(store_id, terminal_id, date, sales, sales_cents, refunds, refund_cents, first_flow_no, last_flow_no, sent_at, received_at, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (store_id, terminal_id, date) DO UPDATE SET
			sales = excluded.sales, sales_cents = excluded.sales_cents,
			refunds = excluded.refunds, refund_cents = excluded.refund_cents,
			first_flow_no = excluded.first_flow_no, last_flow_no = excluded.last_flow_no,
			sent_at = excluded.sent_at, received_at = excluded.received_at, body = excluded.body
		WHERE excluded.sent_at > manifests.sent_at`
	UpsertHeartbeatSQL = `INSERT INTO heartbeats
		(store_id, sent_at, received_at, backlog, oldest_unsent, version, body)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (store_id) DO UPDATE SET
			sent_at = excluded.sent_at, received_at = excluded.received_at, backlog = excluded.backlog,
			oldest_unsent = excluded.oldest_unsent, version = excluded.version, body = excluded.body
		WHERE excluded.sent_at > heartbeats.sent_at`
	// DayTotalsAdd is the ON CONFLICT clause that adds a batch's figures
	// to a day's stored totals, on either insert path.
	DayTotalsAdd = `
		ON CONFLICT (store_id, terminal_id, business_date) DO UPDATE SET
			sales = day_totals.sales + excluded.sales, sales_cents = day_totals.sales_cents + excluded.sales_cents,
			refunds = day_totals.refunds + excluded.refunds, refund_cents = day_totals.refund_cents + excluded.refund_cents`
)

// Transaction returns the stored body of one transaction, or ErrNotFound.
func (r Reader) Transaction(ctx context.Context, storeID, flowNo string) ([]byte, error) {
	rows, err := r.Query(ctx, "SELECT CAST(body AS TEXT) FROM transactions WHERE store_id = ? AND flow_no = ?", storeID, flowNo)
	if err != nil {
		return nil, fmt.Errorf("transaction %s/%s: %w", storeID, flowNo, err)
	}
	var body string
	found := rows.Next()
	if found {
		err = rows.Scan(&body)
	}
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err == nil && !found {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("transaction %s/%s: %w", storeID, flowNo, err)
	}
	return []byte(body), nil
}

// list runs q and reads its rows with scan; what names the list in an
// error.
func list[T any](ctx context.Context, r Reader, what string, scan func(Rows) ([]T, error), q string, args ...any) ([]T, error) {
	rows, err := r.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := scan(rows)
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// Quarantined lists the quarantined transactions of storeID.
func (r Reader) Quarantined(ctx context.Context, storeID string) ([]StoredQuarantine, error) {
	return list(ctx, r, "quarantine of "+storeID, r.Scan.Quarantine, `SELECT store_id, flow_no, reason, detail, body, received_at FROM quarantine
		WHERE store_id = ? ORDER BY received_at, flow_no`, storeID)
}

// Conflicts lists the conflicting bodies received for storeID.
func (r Reader) Conflicts(ctx context.Context, storeID string) ([]StoredConflict, error) {
	return list(ctx, r, "conflicts of "+storeID, r.Scan.Conflicts, `SELECT store_id, flow_no, CAST(body AS TEXT), received_at FROM conflicts
		WHERE store_id = ? ORDER BY received_at, flow_no`, storeID)
}

// StockAdjustments lists a store's stock adjustments, oldest first.
func (r Reader) StockAdjustments(ctx context.Context, storeID string) ([]StoredAdjustment, error) {
	return list(ctx, r, "stock adjustments of "+storeID, r.Scan.Adjustments, `SELECT store_id, adjustment_id, barcode, delta, reason, created_at, CAST(body AS TEXT)
		FROM stock_adjustments WHERE store_id = ? ORDER BY created_at, adjustment_id`, storeID)
}

// Watermark is the high-water mark of one store.
func (r Reader) Watermark(ctx context.Context, storeID string) (Watermark, error) {
	ws, err := list(ctx, r, "read watermarks", r.Scan.Watermarks, WatermarksSelect+" WHERE store_id = ?", storeID)
	if err != nil || len(ws) == 0 {
		return Watermark{StoreID: storeID}, err
	}
	return ws[0], nil
}

// Watermarks lists every known store's high-water mark.
func (r Reader) Watermarks(ctx context.Context) ([]Watermark, error) {
	return list(ctx, r, "read watermarks", r.Scan.Watermarks, WatermarksSelect+" ORDER BY store_id")
}

// Completeness compares manifests with the stored rows and lists the
// stores silent for longer than SilentAfter at now.
func (r Reader) Completeness(ctx context.Context, now time.Time) (Report, error) {
	rep := Report{GeneratedAt: now.UTC(), Incomplete: []DayDiff{}, Silent: []SilentStore{}}
	days, err := list(ctx, r, "completeness", r.Scan.Days, CompletenessSelect)
	if err != nil {
		return rep, err
	}
	rep.Incomplete = DiffDays(days)
	if len(rep.Incomplete) > 0 {
		retention, err := r.journalRetention(ctx)
		if err != nil {
			return rep, err
		}
		for i := range rep.Incomplete {
			rep.Incomplete[i].JournalRetentionDays = retention[rep.Incomplete[i].StoreID]
		}
	}
	silent, err := list(ctx, r, "completeness", func(rows Rows) ([]SilentStore, error) { return r.Scan.Silent(rows, now) },
		"SELECT store_id, last_seen_at FROM stores WHERE last_seen_at < ? ORDER BY store_id", r.TimeArg(now.Add(-r.SilentAfter)))
	if err != nil {
		return rep, err
	}
	rep.Silent = append(rep.Silent, silent...)
	return rep, nil
}

// journalRetention reads, per store, the journal.retention its last
// heartbeat said (wire.Heartbeat.JournalRetentionDays, validated when it
// was received); a store that never said it is absent.
func (r Reader) journalRetention(ctx context.Context) (map[string]int, error) {
	type said struct {
		store string
		days  int
	}
	rows, err := list(ctx, r, "journal retention of the stores", func(rows Rows) ([]said, error) {
		var out []said
		for rows.Next() {
			var id, body string
			if err := rows.Scan(&id, &body); err != nil {
				return nil, err
			}
			var hb wire.Heartbeat
			if json.Unmarshal([]byte(body), &hb) == nil && hb.JournalRetentionDays > 0 {
				out = append(out, said{id, hb.JournalRetentionDays})
			}
		}
		return out, rows.Err()
	}, "SELECT store_id, CAST(body AS TEXT) FROM heartbeats")
	if err != nil {
		return nil, err
	}
	m := make(map[string]int, len(rows))
	for _, s := range rows {
		m[s.store] = s.days
	}
	return m, nil
}

// Fleet lists every store heard from, sorted by store_id.
func (r Reader) Fleet(ctx context.Context, now time.Time) ([]StoreEntry, error) {
	rows, err := list(ctx, r, "read fleet", r.Scan.Fleet, FleetSelect)
	if err != nil {
		return nil, err
	}
	rep, err := r.Completeness(ctx, now)
	if err != nil {
		return nil, err
	}
	return AssembleFleet(rows, rep, now, r.SilentAfter), nil
}
