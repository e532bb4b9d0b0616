package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrDamaged: the journal file failed SQLite's integrity check (or SQLite
// called it malformed). The daemon must not serve on it: `posedge journal
// salvage` copies what is readable into a new file.
var ErrDamaged = errors.New("journal damaged")

// isCorrupt tells SQLite's "malformed" and "not a database" errors.
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	return err != nil && strings.Contains(err.Error(), "malformed")
}

// check runs pragma (quick_check or integrity_check) on db and returns
// ErrDamaged with SQLite's findings (the first few) when it is not "ok".
func check(ctx context.Context, db *sql.DB, path, pragma string) error {
	rows, err := db.QueryContext(ctx, "PRAGMA "+pragma)
	if err != nil {
		if isCorrupt(err) {
			return fmt.Errorf("%w: %s: %s: %v", ErrDamaged, path, pragma, err)
		}
		return fmt.Errorf("%s of journal %s: %w", pragma, path, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("%w: %s: %s: %v", ErrDamaged, path, pragma, err)
		}
		if s != "ok" && len(problems) < 5 {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		if isCorrupt(err) {
			return fmt.Errorf("%w: %s: %s: %v", ErrDamaged, path, pragma, err)
		}
		return fmt.Errorf("%s of journal %s: %w", pragma, path, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrDamaged, path, strings.Join(problems, "; "))
	}
	return nil
}

// QuickCheck runs PRAGMA quick_check (what Open runs; seconds on a large
// file); ErrDamaged when the file is damaged.
func (j *Journal) QuickCheck(ctx context.Context) error {
	return check(ctx, j.r, j.path, "quick_check")
}

// Pragmas are the durability settings of the writer's own connection:
// journal_mode (wal) and synchronous (2 = FULL: every commit fsynced).
// They are read where they matter, on the connection sales commit on.
func (j *Journal) Pragmas(ctx context.Context) (journalMode string, synchronous int, err error) {
	if j.w == nil {
		return "", 0, fmt.Errorf("pragmas of journal %s: opened read-only", j.path)
	}
	if err := j.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&journalMode); err != nil {
		return "", 0, fmt.Errorf("read journal_mode of %s: %w", j.path, err)
	}
	if err := j.w.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&synchronous); err != nil {
		return "", 0, fmt.Errorf("read synchronous of %s: %w", j.path, err)
	}
	return journalMode, synchronous, nil
}
