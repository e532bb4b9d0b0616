package journal

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
)

// salvageTables are every table of the schema, parents first: a line,
// quarantine or unappliable entry of a transaction that could not be read
// is left out (foreign keys). A table the schema gains must be added here
// (TestSalvageCopiesEveryTable fails until it is): stock adjustments not
// yet at HQ are as much the store's only copy as its sales.
var salvageTables = []string{"meta", "items", "catalog", "txns", "txn_lines", "quarantine", "unappliable", "stock_adjustments"}

// SalvageReport says what a salvage copied and what it could not read.
type SalvageReport struct {
	Copied     map[string]int `json:"copied"`     // rows per table
	Unreadable map[string]int `json:"unreadable"` // row ids per table SQLite could not read (a damaged page holds many)
	Skipped    map[string]int `json:"skipped"`    // rows read but refused by the new file (a line of an unreadable transaction)
}

// Salvage copies every row of the damaged journal at src that SQLite can
// still read into a new journal at dest (which must not exist), table by
// table in row id order; where a scan stops at a damaged page it goes on
// row by row past it. src is opened read-only and never changed.
func Salvage(ctx context.Context, src, dest string) (SalvageReport, error) {
	rep := SalvageReport{Copied: map[string]int{}, Unreadable: map[string]int{}, Skipped: map[string]int{}}
	if _, err := os.Stat(dest); err == nil {
		return rep, fmt.Errorf("salvage into %s: it exists already", dest)
	}
	if _, err := os.Stat(src); err != nil {
		return rep, fmt.Errorf("salvage %s: %w", src, err)
	}
	nj, err := Open(ctx, dest, Options{}) // the current schema
	if err != nil {
		return rep, fmt.Errorf("create %s: %w", dest, err)
	}
	if err := nj.Close(); err != nil {
		return rep, fmt.Errorf("create %s: %w", dest, err)
	}
	q := url.Values{}
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	out, err := sql.Open("sqlite", "file:"+dest+"?"+q.Encode())
	if err != nil {
		return rep, fmt.Errorf("open %s: %w", dest, err)
	}
	defer out.Close()
	out.SetMaxOpenConns(1)
	in, err := sql.Open("sqlite", "file:"+src+"?mode=ro")
	if err != nil {
		return rep, fmt.Errorf("open %s read-only: %w", src, err)
	}
	defer in.Close()
	in.SetMaxOpenConns(1)
	for _, table := range salvageTables {
		if !sourceHas(ctx, in, table) {
			continue // a journal from before the table existed
		}
		if err := salvageTable(ctx, in, out, table, &rep); err != nil {
			return rep, fmt.Errorf("salvage table %s of %s: %w", table, src, err)
		}
	}
	// The new file is at the current schema version; rows of a journal
	// from before it came with the times of their day.
	tx, err := out.BeginTx(ctx, nil)
	if err != nil {
		return rep, fmt.Errorf("upgrade the times salvaged into %s: %w", dest, err)
	}
	defer tx.Rollback()
	if _, err := fixTimes(ctx, tx, slog.New(slog.DiscardHandler)); err != nil {
		return rep, fmt.Errorf("upgrade the times salvaged into %s: %w", dest, err)
	}
	if err := tx.Commit(); err != nil {
		return rep, fmt.Errorf("upgrade the times salvaged into %s: %w", dest, err)
	}
	return rep, nil
}

// sourceHas says whether the damaged journal has a table; when its schema
// cannot be read the table is tried anyway (the scan says what it finds).
func sourceHas(ctx context.Context, in *sql.DB, table string) bool {
	var n int
	if err := in.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n); err != nil {
		return true
	}
	return n > 0
}

func salvageTable(ctx context.Context, in, out *sql.DB, table string, rep *SalvageReport) error {
	cols, err := columns(ctx, out, table)
	if err != nil {
		return err
	}
	list := strings.Join(cols, ", ")
	ins := fmt.Sprintf("INSERT OR IGNORE INTO %s (%s) VALUES (%s)", table, list, strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", "))
	tx, err := out.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	put := func(vals []any) error {
		if _, err := tx.ExecContext(ctx, ins, vals...); err != nil {
			if strings.Contains(err.Error(), "FOREIGN KEY") {
				rep.Skipped[table]++
				return nil
			}
			return err
		}
		rep.Copied[table]++
		return nil
	}

	// One scan in row id order, as far as it goes.
	last, scanErr := int64(0), error(nil)
	rows, err := in.QueryContext(ctx, fmt.Sprintf("SELECT rowid, %s FROM %s ORDER BY rowid", list, table))
	if err != nil {
		scanErr = err
	} else {
		for rows.Next() {
			vals, err := scanRow(rows, len(cols)+1)
			if err != nil {
				scanErr = err
				break
			}
			last = vals[0].(int64)
			if err := put(vals[1:]); err != nil {
				rows.Close()
				return err
			}
		}
		if scanErr == nil {
			scanErr = rows.Err()
		}
		rows.Close()
	}
	if scanErr != nil {
		// Past the damage row by row: up to the largest row id SQLite
		// can name, else until a long run of ids holds nothing readable.
		max := int64(-1)
		if err := in.QueryRowContext(ctx, fmt.Sprintf("SELECT max(rowid) FROM %s", table)).Scan(&max); err != nil {
			max = -1
		}
		one := fmt.Sprintf("SELECT rowid, %s FROM %s WHERE rowid = ?", list, table)
		misses := 0
		for id := last + 1; (max >= 0 && id <= max) || (max < 0 && misses < 100000); id++ {
			r, err := in.QueryContext(ctx, one, id)
			if err != nil {
				rep.Unreadable[table]++
				misses++
				continue
			}
			found := false
			for r.Next() {
				vals, err := scanRow(r, len(cols)+1)
				if err != nil {
					rep.Unreadable[table]++
					break
				}
				found = true
				if err := put(vals[1:]); err != nil {
					r.Close()
					return err
				}
			}
			if r.Err() != nil {
				rep.Unreadable[table]++
			}
			r.Close()
			if found {
				misses = 0
			} else {
				misses++
			}
		}
	}
	return tx.Commit()
}

func scanRow(rows *sql.Rows, n int) ([]any, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	return vals, nil
}

func columns(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT name FROM pragma_table_info('%s') ORDER BY cid", table))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}
