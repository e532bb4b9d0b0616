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
	more := 0
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("%w: %s: %s: %v", ErrDamaged, path, pragma, err)
		}
		if s == "ok" {
			continue
		}
		// One row may hold many findings, a line each (quick_check
		// does): the first few say enough for a log line and a status.
		for _, p := range strings.Split(s, "\n") {
			if p = strings.TrimSpace(p); p == "" || p == "*** in database main ***" {
				continue
			}
			if len(problems) < 5 {
				problems = append(problems, p)
			} else {
				more++
			}
		}
	}
	if err := rows.Err(); err != nil {
		if isCorrupt(err) {
			return fmt.Errorf("%w: %s: %s: %v", ErrDamaged, path, pragma, err)
		}
		return fmt.Errorf("%s of journal %s: %w", pragma, path, err)
	}
	if more > 0 {
		problems = append(problems, fmt.Sprintf("and %d more", more))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrDamaged, path, strings.Join(problems, "; "))
	}
	return nil
}

// QuickCheck runs PRAGMA quick_check on a reader connection (seconds on
// a large file: every page is read; sales go on meanwhile, WAL lets the
// writer commit beside it); ErrDamaged when the file is damaged. A
// damaged finding is kept: from then on Damaged returns it and the
// journal takes no write.
func (j *Journal) QuickCheck(ctx context.Context) error {
	err := check(ctx, j.scan, j.path, "quick_check")
	if errors.Is(err, ErrDamaged) {
		j.damaged.CompareAndSwap(nil, &err)
	}
	return err
}

// Damaged is what the QuickCheck that found the journal damaged said (an
// error wrapping ErrDamaged), or nil when none did. Once damaged, every
// write is refused with ErrUnavailable (wrapping the finding): the
// ledger answers sales 503 journal_unavailable, and the operator runs
// `posedge journal salvage`.
func (j *Journal) Damaged() error {
	if p := j.damaged.Load(); p != nil {
		return *p
	}
	return nil
}

// Ping reads one row of a small table: whether the journal answers at
// all, in constant time whatever its size (the health prober asks it
// every few seconds; Stats counts rows).
func (j *Journal) Ping(ctx context.Context) error {
	var n int
	if err := j.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM meta LIMIT 1)`).Scan(&n); err != nil {
		if isCorrupt(err) {
			return fmt.Errorf("%w: %s: %v", ErrDamaged, j.path, err)
		}
		return fmt.Errorf("read journal %s: %w", j.path, err)
	}
	return nil
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
