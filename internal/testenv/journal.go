package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the journal's own driver, registered as "sqlite"
)

// FillJournal adds n delivered sales to the journal at path — a file
// offline/journal.Open made and closed — in one transaction of plain SQL
// (a few seconds for a million rows, where Append would take minutes):
// one line each (item A, 2.50, also put in the items table), flow numbers 1…n in normal mode (seq 1…n), journaled a
// day ago, applied to Redis, acknowledged by JetStream and confirmed by
// HQ, so nothing is to replay, apply or prune. For tests of what a large
// journal costs; ids are T01 / big-<i>.
func FillJournal(t testing.TB, path string, n int) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	at := time.Now().Add(-24 * time.Hour).UTC()
	stamp := at.Format("2006-01-02T15:04:05.000000000Z")
	day := at.Format("20060102")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const series = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?) `
	if _, err := tx.ExecContext(ctx, series+`INSERT INTO txns (flow_no, seq, terminal_id, idem_key, fingerprint, kind,
		tender, total_cents, business_day, business_hour, created_at, body, mode, applied, state, journaled_at, acked_at, confirmed_at)
		SELECT printf('1%015d', i), i, 'T01', 'big-' || i, 'fp', 'sale', 'cash', 250, ?, '10', ?,
			printf('{"flow_no":"1%015d","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":250,"tender":"cash","lines":[{"barcode":"A","qty":1,"price_cents":250}],"created_at":"%s","occurred_at":"%s"}', i, ?, ?),
			'normal', 1, 'acked', ?, ?, ?
		FROM c`, n, day, stamp, stamp, stamp, stamp, stamp, stamp); err != nil {
		t.Fatalf("fill journal %s: %v", path, err)
	}
	if _, err := tx.ExecContext(ctx, series+`INSERT INTO txn_lines (flow_no, n, barcode, qty, price_cents)
		SELECT printf('1%015d', i), 0, 'A', 1, 250 FROM c`, n); err != nil {
		t.Fatalf("fill journal %s: %v", path, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO items (barcode, name, price_cents, stock, updated_at)
		VALUES ('A', 'big journal item', 250, 1000000, ?) ON CONFLICT (barcode) DO NOTHING`, stamp); err != nil {
		t.Fatalf("fill journal %s: %v", path, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("fill journal %s: %v", path, err)
	}
	// Every page in the main file, as after a clean stop.
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(fmt.Errorf("checkpoint %s: %w", path, err))
	}
}
