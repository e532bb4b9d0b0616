package testenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/posedge/posedge/internal/testenv"
)

func TestStartPostgres(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatalf("connect %s: %v", pg.URL(), err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "PostgreSQL") {
		t.Fatalf("version() = %q", v)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}

	// A new database is empty: tests sharing the cluster are isolated.
	url := pg.NewDatabase(t)
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer other.Close(ctx)
	var n int
	if err := other.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("new database sees table t of another database")
	}
	if url == pg.URL() || url == pg.NewDatabase(t) {
		t.Fatalf("NewDatabase returned a URL twice: %s", url)
	}
}

func TestPostgresStopStartKeepsCommittedRows(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	pg.Stop(t)
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("connection still answers after Stop")
	}
	conn.Close(ctx)
	pg.Start(t)
	conn, err = pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatalf("connect after Start: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows after restart = %d, %v; want 2", n, err)
	}
}
