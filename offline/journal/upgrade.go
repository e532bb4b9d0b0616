package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Upgrades of a journal's rows in place, which a new table (CREATE TABLE
// IF NOT EXISTS, see migrate) does not need: the schema version in meta
// counts those a journal has had. A read-only open never upgrades: it
// reads the rows as they are until the daemon's next start.

// MetaSchemaVersion is the meta key of the journal's schema version;
// unset in a journal of a version before it was kept (version 0).
const MetaSchemaVersion = "schema_version"

// Schema versions.
const (
	// schemaFixedTimes: every time column holds timeLayout; before it,
	// RFC 3339 with the fraction's trailing zeros trimmed.
	schemaFixedTimes = 1
	// schemaConfirmed: txns has the columns of HQ's delivery
	// confirmation (confirmed_at, resends, lacks, dup_ack, confirm_due).
	// Rows acked before it are unconfirmed: HQ is asked about each once.
	schemaConfirmed = 2
	// schemaStreamSeq: txns has stream_seq (the stream sequence of the
	// row's last PubAck, which HQ uses to tell a row its consumer has not
	// read yet from one it lacks) and first_acked_at (the first ack of
	// the row's way to HQ, kept across resends: the age of an
	// unconfirmed row). Rows acked before it have stream_seq 0 (HQ
	// answers for them as before) and first_acked_at = acked_at.
	schemaStreamSeq = 3

	schemaVersion = schemaStreamSeq // what this version writes
)

// upgrade brings the rows of a journal of an earlier schema version to
// the current one, inside the migration's transaction tx: a crash half
// way leaves the journal as it was.
func upgrade(ctx context.Context, tx *sql.Tx, log *slog.Logger) error {
	v, err := readSchemaVersion(ctx, tx)
	if err != nil {
		return err
	}
	if v >= schemaVersion {
		// Current, or written by a newer posedge: its rows are its own.
		return confirmIndex(ctx, tx)
	}
	// The columns first: fixTimes rewrites them too (all NULL here).
	if v < schemaConfirmed {
		n, err := addColumns(ctx, tx, confirmColumns())
		if err != nil {
			return fmt.Errorf("upgrade journal to schema version %d (delivery confirmation): %w", schemaConfirmed, err)
		}
		if n > 0 {
			log.Info("journal upgraded: delivery confirmation columns added; acked rows are confirmed with HQ", "columns", n)
		}
	}
	if v < schemaStreamSeq {
		n, err := addColumns(ctx, tx, streamSeqColumns())
		if err != nil {
			return fmt.Errorf("upgrade journal to schema version %d (stream sequences): %w", schemaStreamSeq, err)
		}
		if n > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE txns SET first_acked_at = acked_at WHERE first_acked_at IS NULL AND acked_at IS NOT NULL`); err != nil {
				return fmt.Errorf("upgrade journal to schema version %d: first acks: %w", schemaStreamSeq, err)
			}
			log.Info("journal upgraded: stream sequence and first ack columns added", "columns", n)
		}
	}
	if v < schemaFixedTimes {
		start := time.Now()
		n, err := fixTimes(ctx, tx, log)
		if err != nil {
			return fmt.Errorf("upgrade journal to schema version %d (fixed-width times): %w", schemaFixedTimes, err)
		}
		if n > 0 {
			log.Info("journal upgraded: times rewritten in fixed width", "rows", n, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	if err := confirmIndex(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`,
		MetaSchemaVersion, strconv.Itoa(schemaVersion)); err != nil {
		return fmt.Errorf("record journal schema version %d: %w", schemaVersion, err)
	}
	return nil
}

// confirmColumns are the columns schemaConfirmed added to txns, with
// their definitions (ALTER TABLE ADD COLUMN takes the same as CREATE).
func confirmColumns() [][2]string {
	return [][2]string{
		{"confirmed_at", "TEXT"},
		{"resends", "INTEGER NOT NULL DEFAULT 0"},
		{"lacks", "INTEGER NOT NULL DEFAULT 0"},
		{"dup_ack", "INTEGER NOT NULL DEFAULT 0"},
		{"confirm_due", "TEXT"},
	}
}

// streamSeqColumns are the columns schemaStreamSeq added to txns.
func streamSeqColumns() [][2]string {
	return [][2]string{
		{"stream_seq", "INTEGER NOT NULL DEFAULT 0"},
		{"first_acked_at", "TEXT"},
	}
}

// addColumns adds to txns those of cols it lacks (a journal created by
// this version has them all) and returns how many.
func addColumns(ctx context.Context, tx *sql.Tx, cols [][2]string) (int, error) {
	n := 0
	for _, c := range cols {
		has, err := hasColumn(ctx, tx, "txns", c[0])
		if err != nil {
			return n, err
		}
		if has {
			continue
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE txns ADD COLUMN `+c[0]+` `+c[1]); err != nil {
			return n, fmt.Errorf("add column txns.%s: %w", c[0], err)
		}
		n++
	}
	return n, nil
}

// confirmIndex is the index of the rows JetStream acked that HQ has not
// confirmed: few while HQ confirms, all of an HQ outage's otherwise.
func confirmIndex(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS txns_unconfirmed ON txns(acked_at)
		WHERE state = 'acked' AND confirmed_at IS NULL`); err != nil {
		return fmt.Errorf("create index txns_unconfirmed: %w", err)
	}
	return nil
}

// hasColumn reports whether table has column. table and column are this
// package's constants, never input.
func hasColumn(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, table, column string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`, table, column).Scan(&n); err != nil {
		return false, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	return n > 0, nil
}

func readSchemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var s string
	err := q.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = ?`, MetaSchemaVersion).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read journal schema version: %w", err)
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("journal schema version %q is not a number", s)
	}
	return v, nil
}

// timeTable is a table's columns holding times; where (constant SQL,
// never input) narrows it to the rows that hold times.
type timeTable struct {
	table   string
	columns []string
	where   string
}

// timeTables are every time the journal keeps. A new time column must be
// added here, and written through ts.
func timeTables() []timeTable {
	return []timeTable{
		{"txns", []string{"created_at", "journaled_at", "acked_at", "confirmed_at", "confirm_due", "first_acked_at"}, ""},
		{"items", []string{"updated_at"}, ""},
		{"quarantine", []string{"at"}, ""},
		{"unappliable", []string{"at"}, ""},
		{"catalog", []string{"applied_at"}, ""},
		{"stock_adjustments", []string{"created_at", "acked_at"}, ""},
		{"meta", []string{"v"}, "k = '" + MetaCatalogAppliedAt + "'"},
	}
}

// fixTimes rewrites every time column value not in timeLayout into it
// and returns how many rows it changed. A value that is no time at all
// is left as it is (and logged): it never was comparable.
func fixTimes(ctx context.Context, tx *sql.Tx, log *slog.Logger) (int, error) {
	total := 0
	for _, tt := range timeTables() {
		n, err := fixTimeTable(ctx, tx, tt)
		total += n
		if err != nil {
			return total, fmt.Errorf("rewrite the times of %s: %w", tt.table, err)
		}
		for _, c := range tt.columns {
			n, err := fixOtherTimes(ctx, tx, tt, c, log)
			total += n
			if err != nil {
				return total, fmt.Errorf("rewrite %s.%s: %w", tt.table, c, err)
			}
		}
	}
	return total, nil
}

// trimmedUTC matches what ts wrote before timeLayout: RFC 3339 in UTC
// whose fraction, when there is one, lost its trailing zeros; padUTC
// pads its fraction to nine digits. Both take the column as %[1]s.
const (
	trimmedUTC = `(%[1]s GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z'
		OR (%[1]s GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9]*Z'
			AND length(%[1]s) <= 29 AND substr(%[1]s, 21, length(%[1]s) - 21) NOT GLOB '*[^0-9]*'))`
	padUTC = `substr(%[1]s, 1, 19) || '.' ||
		substr(CASE WHEN length(%[1]s) > 20 THEN substr(%[1]s, 21, length(%[1]s) - 21) ELSE '' END || '000000000', 1, 9) || 'Z'`
)

// fixTimeTable pads the times ts wrote before timeLayout in one UPDATE
// of every time column of the table: each row is written once. (A value
// at a time from Go took seconds per hundred thousand rows.)
func fixTimeTable(ctx context.Context, tx *sql.Tx, tt timeTable) (int, error) {
	var set, short []string
	for _, c := range tt.columns {
		trimmed := fmt.Sprintf(trimmedUTC, c)
		set = append(set, fmt.Sprintf(`%s = CASE WHEN %s THEN %s ELSE %s END`, c, trimmed, fmt.Sprintf(padUTC, c), c))
		// Cheap: a trimmed value is shorter than timeLayout.
		short = append(short, fmt.Sprintf(`length(%s) < %d`, c, len(timeLayout)))
	}
	q := fmt.Sprintf(`UPDATE %s SET %s WHERE (%s)`, tt.table, strings.Join(set, ", "), strings.Join(short, " OR "))
	if tt.where != "" {
		q += " AND " + tt.where
	}
	res, err := tx.ExecContext(ctx, q)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// fixOtherTimes rewrites, in Go, the times of one column fixTimeTable
// left (an offset other than Z: no posedge wrote one, but the journal
// must compare whatever it holds), a chunk of rows at a time in rowid
// order, reading only the values that are not timeLayout's 30
// characters ending in Z.
func fixOtherTimes(ctx context.Context, tx *sql.Tx, tt timeTable, column string, log *slog.Logger) (int, error) {
	const chunk = 1000
	where := ""
	if tt.where != "" {
		where = " AND " + tt.where
	}
	sel := fmt.Sprintf(`SELECT rowid, %[2]s FROM %[1]s WHERE rowid > ? AND %[2]s IS NOT NULL
		AND (length(%[2]s) != %[3]d OR substr(%[2]s, %[3]d, 1) != 'Z')%[4]s ORDER BY rowid LIMIT %[5]d`,
		tt.table, column, len(timeLayout), where, chunk)
	upd := fmt.Sprintf(`UPDATE %s SET %s = ? WHERE rowid = ?`, tt.table, column)
	type value struct {
		rowID int64
		v     string
	}
	rewritten := 0
	var last int64
	for {
		rows, err := tx.QueryContext(ctx, sel, last)
		if err != nil {
			return rewritten, err
		}
		var vs []value
		for rows.Next() {
			var v value
			if err := rows.Scan(&v.rowID, &v.v); err != nil {
				rows.Close()
				return rewritten, err
			}
			vs = append(vs, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return rewritten, err
		}
		for _, v := range vs {
			t, err := time.Parse(time.RFC3339Nano, v.v)
			if err != nil {
				log.Warn("journal upgrade: a time column holds no time; left as it is",
					"table", tt.table, "column", column, "rowid", v.rowID, "value", v.v)
				continue
			}
			if _, err := tx.ExecContext(ctx, upd, ts(t), v.rowID); err != nil {
				return rewritten, err
			}
			rewritten++
		}
		if len(vs) < chunk {
			return rewritten, nil
		}
		last = vs[len(vs)-1].rowID
	}
}
