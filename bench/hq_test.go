package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb/sqlite"
	"github.com/posedge/posedge/sync/wire"
)

// hqBatch is posedge-hq's default batch_size; the raw inserts batch as
// many rows per transaction.
const hqBatch = 256

// row is one transaction as HQ stores it.
type row struct {
	store, flow, terminal, kind string
	cents                       int64
	created, body, received     string
}

// measureIngest has posedge-hq ingest the stream the edge filled (every
// sale of this run) into a fresh database, from its first stored row to
// the last, against a raw batched insert of the same rows into a fresh
// database of the same kind; SQLite and PostgreSQL.
func (h *harness) measureIngest() {
	want := h.streamRows()
	var rows []row
	for _, kind := range []string{"sqlite", "postgres"} {
		var ratios, rates, rawRates []float64
		for rep := range h.sz.Reps {
			var dsn string
			var count func() int
			if kind == "sqlite" {
				path := filepath.Join(h.t.TempDir(), "hq.db")
				dsn, count = "sqlite://"+path, h.sqliteCount(path)
			} else {
				dsn = h.pg.NewDatabase(h.t)
				count = h.postgresCount(dsn)
			}
			rate := h.hqIngest(fmt.Sprintf("%s%d", kind, rep), dsn, want, count)
			if n := h.countRows(kind, dsn); n != want {
				h.t.Fatalf("posedge-hq's stores table counted %d transactions, its transactions table holds %d", want, n)
			}
			if rows == nil {
				rows = h.hqRows(dsn)
			}
			var raw float64
			if kind == "sqlite" {
				raw = h.rawSQLite(rows)
			} else {
				raw = h.rawPostgres(h.pg.NewDatabase(h.t), rows)
			}
			rates, rawRates, ratios = append(rates, rate), append(rawRates, raw), append(ratios, rate/raw)
		}
		h.add(figure{Name: "hq_ingest_vs_raw_" + kind, Value: median(ratios), Goal: ">= 0.5",
			Detail: fmt.Sprintf("posedge-hq ingesting %d replayed sales from JetStream (first row stored to last) ÷ raw insert of the same rows (SQLite: prepared multi-row INSERT; PostgreSQL: COPY), %d per transaction; reps %s",
				want, hqBatch, spread(ratios, "%.2f"))})
		h.add(figure{Name: "hq_" + kind + "_rows_per_s", Value: median(rates), Detail: "rows/s; reps " + spread(rates, "%.0f")})
		h.add(figure{Name: "raw_" + kind + "_rows_per_s", Value: median(rawRates), Detail: "rows/s; reps " + spread(rawRates, "%.0f")})
	}
}

// streamRows waits until every journaled transaction is in the stream
// and returns how many there are: what an ingest from the stream's start
// stores. A run without the sales phase (POSEDGE_BENCH_PHASES) first
// makes as many sales as it would have left there.
func (h *harness) streamRows() int {
	if h.sales == 0 {
		n := h.sz.Reps * (h.sz.Sales + h.sz.PacedSales)
		if _, _, err := runConcurrent(n, h.saleOp()); err != nil {
			h.t.Fatal(err)
		}
		h.sales += n
	}
	h.waitBacklogEmpty()
	return h.store.JournalRows("")
}

// hqCPUProfileEnv names a directory for a CPU profile of each posedge-hq
// the ingest figures start (`posedge-hq run --cpuprofile`).
const hqCPUProfileEnv = "POSEDGE_BENCH_HQ_CPUPROFILE"

// hqIngest starts posedge-hq on database dsn with its durable consumer
// removed, so that it ingests the whole stream again, and returns its
// rows/s.
func (h *harness) hqIngest(name, dsn string, want int, count func() int) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := h.js.DeleteConsumer(ctx, wire.DefaultStream, hq.ConsumerName)
	cancel()
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		h.t.Fatalf("delete consumer %s: %v", hq.ConsumerName, err)
	}
	dir := h.t.TempDir()
	conf := filepath.Join(dir, "hq.yaml")
	admin := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(h.t))
	body := fmt.Sprintf("nats_url: %q\nstream: %q\nsubject_prefix: %q\ndatabase: %q\nadmin:\n  listen: %q\n",
		h.store.NATS.URL(), wire.DefaultStream, wire.DefaultSubjectPrefix, dsn, admin)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		h.t.Fatal(err)
	}
	args := []string{filepath.Join(binDir, "posedge-hq"), "run", "--config", conf}
	profile := ""
	if d := os.Getenv(hqCPUProfileEnv); d != "" {
		profile = filepath.Join(d, "posedge-hq-"+name+".pprof")
		args = append(args, "--cpuprofile", profile)
	}
	p := &testenv.Proc{Name: "posedge-hq-" + name, Args: args, Log: filepath.Join(dir, "hq.log")}
	cpuBefore := readProcCPU()
	started := time.Now()
	p.Start(h.t)
	defer func() {
		if profile == "" {
			p.Kill()
			return
		}
		if err := p.Terminate(30 * time.Second); err != nil { // SIGTERM writes the profile
			h.t.Errorf("stop posedge-hq for its CPU profile: %v", err)
		}
		h.notef("hq ingest %s: posedge-hq's CPU profile: go tool pprof -top %s", name, profile)
	}()
	var first time.Time
	firstN := 0
	deadline := started.Add(5 * time.Minute)
	for {
		n := count()
		now := time.Now()
		if n > 0 && first.IsZero() {
			first, firstN = now, n
		}
		if n >= want {
			from, rows := first, want-firstN
			if now.Sub(first) < 2*pollEvery || want-firstN < want/4 {
				h.notef("hq ingest %s: %d rows stored between two looks; timed from the process start", name, want)
				from, rows = started, want
			}
			h.noteHQBatches(name, admin, want, now.Sub(started))
			cpu, _ := perOpMicros(cpuBefore, readProcCPU(), want)
			h.notef("hq ingest %s: CPU per row by process, from posedge-hq's start to the last row: %s", name, cpu)
			return float64(rows) / now.Sub(from).Seconds()
		}
		if !p.Running() {
			h.t.Fatalf("posedge-hq exited:\n%s", p.Tail(3000))
		}
		if now.After(deadline) {
			h.t.Fatalf("posedge-hq stored %d of %d rows:\n%s", n, want, p.Tail(3000))
		}
		time.Sleep(pollEvery)
	}
}

// The counts below are polled every pollEvery while posedge-hq works:
// each is one open connection and a read of HQ's stores table (one row a
// store, kept in the transaction that stores the rows), so the poll costs
// the measured process next to nothing. Counting the rows themselves, on
// a fresh connection each time, cost PostgreSQL a backend start and both
// databases a scan of the growing table 50 times a second; hqIngest
// checks the count against COUNT(*) once at the end.
const storedQuery = `SELECT COALESCE(SUM(txn_count), 0) FROM stores`

// sqliteCount counts HQ's rows read-only beside posedge-hq; 0 until its
// tables exist.
func (h *harness) sqliteCount(path string) func() int {
	var db *sql.DB
	h.t.Cleanup(func() {
		if db != nil {
			db.Close()
		}
	})
	return func() int {
		if db == nil {
			if _, err := os.Stat(path); err != nil {
				return 0
			}
			c, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
			if err != nil {
				return 0
			}
			c.SetMaxOpenConns(1)
			db = c
		}
		var n int
		if err := db.QueryRow(storedQuery).Scan(&n); err != nil {
			return 0
		}
		return n
	}
}

func (h *harness) postgresCount(dsn string) func() int {
	var conn *pgx.Conn
	h.t.Cleanup(func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	})
	return func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if conn == nil {
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return 0
			}
			conn = c
		}
		var n int
		if err := conn.QueryRow(ctx, storedQuery).Scan(&n); err != nil {
			return 0
		}
		return n
	}
}

// countRows is COUNT(*) of HQ's transactions table.
func (h *harness) countRows(kind, dsn string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n int
	if kind == "postgres" {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			h.t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, `SELECT COUNT(*) FROM transactions`).Scan(&n); err != nil {
			h.t.Fatal(err)
		}
		return n
	}
	db := h.openHQSQLite(dsn)
	defer db.Close()
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM transactions`).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// openHQSQLite opens posedge-hq's SQLite database of dsn read-only.
func (h *harness) openHQSQLite(dsn string) *sql.DB {
	u, err := hq.ParseDatabaseURL(dsn)
	if err != nil {
		h.t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+u.Path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		h.t.Fatal(err)
	}
	return db
}

// hqRows reads back what posedge-hq stored: the raw inserts' input.
func (h *harness) hqRows(dsn string) []row {
	db := h.openHQSQLite(dsn)
	defer db.Close()
	rs, err := db.Query(`SELECT store_id, flow_no, terminal_id, kind, total_cents, created_at, body, received_at FROM transactions`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.store, &r.flow, &r.terminal, &r.kind, &r.cents, &r.created, &r.body, &r.received); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		h.t.Fatal(err)
	}
	return out
}

// rawTable is the contract's transactions table and nothing else.
const rawTable = `CREATE TABLE transactions (
	store_id TEXT NOT NULL, flow_no TEXT NOT NULL, terminal_id TEXT NOT NULL, kind TEXT NOT NULL,
	total_cents %s NOT NULL, created_at TEXT NOT NULL, body TEXT NOT NULL, received_at TEXT NOT NULL,
	PRIMARY KEY (store_id, flow_no))`

// rawSQLite inserts rows into a fresh file with posedge-hq's pragmas, in
// transactions of hqBatch rows, each chunk of rawMultiRows rows one
// prepared multi-row INSERT (prepared once): the strongest plain insert
// SQLite has; rows/s.
func (h *harness) rawSQLite(rows []row) float64 {
	db, err := sql.Open("sqlite", sqlite.DSN(filepath.Join(h.t.TempDir(), "raw.db")))
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(fmt.Sprintf(rawTable, "INTEGER")); err != nil {
		h.t.Fatal(err)
	}
	stmts := map[int]*sql.Stmt{}
	for n := rawMultiRows; n > 0; n /= 2 {
		st, err := db.Prepare("INSERT INTO transactions VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?), ", n), ", "))
		if err != nil {
			h.t.Fatal(err)
		}
		defer st.Close()
		stmts[n] = st
	}
	start := time.Now()
	for lo := 0; lo < len(rows); lo += hqBatch {
		tx, err := db.Begin()
		if err != nil {
			h.t.Fatal(err)
		}
		batch := rows[lo:min(lo+hqBatch, len(rows))]
		for len(batch) > 0 {
			n := rawMultiRows
			for n > len(batch) {
				n /= 2
			}
			args := make([]any, 0, 8*n)
			for _, r := range batch[:n] {
				args = append(args, r.store, r.flow, r.terminal, r.kind, r.cents, r.created, r.body, r.received)
			}
			if _, err := tx.Stmt(stmts[n]).Exec(args...); err != nil {
				h.t.Fatal(err)
			}
			batch = batch[n:]
		}
		if err := tx.Commit(); err != nil {
			h.t.Fatal(err)
		}
	}
	return float64(len(rows)) / time.Since(start).Seconds()
}

// rawMultiRows is the most rows of one raw SQLite insert, as many as
// posedge-hq's own multi-row insert takes.
const rawMultiRows = 128

// rawPostgres copies rows in transactions of hqBatch rows, each one COPY
// into the table (the fastest way rows go into PostgreSQL); rows/s.
func (h *harness) rawPostgres(dsn string, rows []row) float64 {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, fmt.Sprintf(rawTable, "BIGINT")); err != nil {
		h.t.Fatal(err)
	}
	cols := []string{"store_id", "flow_no", "terminal_id", "kind", "total_cents", "created_at", "body", "received_at"}
	start := time.Now()
	for lo := 0; lo < len(rows); lo += hqBatch {
		chunk := rows[lo:min(lo+hqBatch, len(rows))]
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"transactions"}, cols, pgx.CopyFromSlice(len(chunk), func(i int) ([]any, error) {
			r := &chunk[i]
			return []any{r.store, r.flow, r.terminal, r.kind, r.cents, r.created, r.body, r.received}, nil
		})); err != nil {
			h.t.Fatal(err)
		}
	}
	return float64(len(rows)) / time.Since(start).Seconds()
}

// noteHQBatches notes how posedge-hq's batches went: their mean size and
// the share of the ingest spent committing them.
func (h *harness) noteHQBatches(name, admin string, rows int, took time.Duration) {
	m, err := scrapeMetrics(h.http, "http://"+admin+"/metrics")
	if err != nil {
		h.notef("hq ingest %s: no metrics: %v", name, err)
		return
	}
	const batch = "posedge_hq_batch_commit_seconds"
	n := m[batch+"_count"]
	if n == 0 {
		h.notef("hq ingest %s: no %s in its metrics", name, batch)
		return
	}
	h.notef("hq ingest %s: %.0f batches, %.0f rows each on average, their commits %.0f%% of the %s from the process start to the last row",
		name, n, float64(rows)/n, 100*m[batch+"_sum"]/took.Seconds(), took.Round(time.Millisecond))
}
