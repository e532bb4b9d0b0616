package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
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

	schemaVersion = schemaFixedTimes // what this version writes
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
		return nil
	}
	if v < schemaFixedTimes {
		start := time.Now()
		n, err := fixTimes(ctx, tx, log)
		if err != nil {
			return fmt.Errorf("upgrade journal to schema version %d (fixed-width times): %w", schemaFixedTimes, err)
		}
		if n > 0 {
			log.Info("journal upgraded: times rewritten in fixed width", "values", n, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`,
		MetaSchemaVersion, strconv.Itoa(schemaVersion)); err != nil {
		return fmt.Errorf("record journal schema version %d: %w", schemaVersion, err)
	}
	return nil
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

// timeColumn is a column holding times; where (constant SQL, never
// input) narrows it to the rows that do.
type timeColumn struct{ table, column, where string }

// timeColumns are every time the journal keeps. A new one must be added
// here and written through ts.
func timeColumns() []timeColumn {
	return []timeColumn{
		{"txns", "created_at", ""},
		{"txns", "journaled_at", ""},
		{"txns", "acked_at", ""},
		{"items", "updated_at", ""},
		{"quarantine", "at", ""},
		{"unappliable", "at", ""},
		{"catalog", "applied_at", ""},
		{"stock_adjustments", "created_at", ""},
		{"stock_adjustments", "acked_at", ""},
		{"meta", "v", "k = '" + MetaCatalogAppliedAt + "'"},
	}
}

// fixTimes rewrites every time column value not in timeLayout into it
// and returns how many it rewrote. A value that is no time at all is
// left as it is (and logged): it never was comparable.
func fixTimes(ctx context.Context, tx *sql.Tx, log *slog.Logger) (int, error) {
	total := 0
	for _, c := range timeColumns() {
		n, err := fixTimeColumn(ctx, tx, c, log)
		total += n
		if err != nil {
			return total, fmt.Errorf("rewrite %s.%s: %w", c.table, c.column, err)
		}
	}
	return total, nil
}

// fixTimeColumn rewrites one column, a chunk of rows at a time in rowid
// order: only the values that are not timeLayout's 30 characters ending
// in Z (most of a journal's are already, a fraction with no trailing
// zero) are read at all.
func fixTimeColumn(ctx context.Context, tx *sql.Tx, c timeColumn, log *slog.Logger) (int, error) {
	const chunk = 1000
	where := ""
	if c.where != "" {
		where = " AND " + c.where
	}
	sel := fmt.Sprintf(`SELECT rowid, %[2]s FROM %[1]s WHERE rowid > ? AND %[2]s IS NOT NULL
		AND (length(%[2]s) != %[3]d OR substr(%[2]s, %[3]d, 1) != 'Z')%[4]s ORDER BY rowid LIMIT %[5]d`,
		c.table, c.column, len(timeLayout), where, chunk)
	upd := fmt.Sprintf(`UPDATE %s SET %s = ? WHERE rowid = ?`, c.table, c.column)
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
					"table", c.table, "column", c.column, "rowid", v.rowID, "value", v.v)
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
