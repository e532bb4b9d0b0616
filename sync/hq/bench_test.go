package hq_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/hqdb/sqlite"
	"github.com/posedge/posedge/sync/wire"
)

// BenchmarkIngest compares posedge-hq's ingest (JetStream pull, decode,
// one transaction per batch, acks) with a raw batched insert of the same
// rows into the same database, one op being one row. Reported: hq_rows/s,
// raw_rows/s and their ratio (goal ≥ 0.5). For stable figures:
//
//	go test -run '^$' -bench Ingest -benchtime 50000x ./sync/hq/
func BenchmarkIngest(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchIngest(b, func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "hq.db") }, rawSQLite)
	})
	b.Run("postgres", func(b *testing.B) {
		pg := testenv.StartPostgres(b)
		benchIngest(b, func(b *testing.B) string { return pg.NewDatabase(b) }, rawPostgres)
	})
}

const benchBatch = 256

// BenchmarkInsertBatch is the database side alone: Store.InsertBatch in
// batches of 256 against the raw batched insert of the same rows.
func BenchmarkInsertBatch(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		benchInsertBatch(b, func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "hq.db") }, rawSQLite)
	})
	b.Run("postgres", func(b *testing.B) {
		pg := testenv.StartPostgres(b)
		benchInsertBatch(b, func(b *testing.B) string { return pg.NewDatabase(b) }, rawPostgres)
	})
}

func benchInsertBatch(b *testing.B, newDSN func(b *testing.B) string, raw func(b *testing.B, dsn string, msgs []hqdb.Msg) time.Duration) {
	msgs := benchMsgs(b, b.N)
	rawDur := raw(b, newDSN(b), msgs)
	store, err := hq.OpenStore(context.Background(), newDSN(b), hqdb.StoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	b.ResetTimer()
	start := time.Now()
	for lo := 0; lo < len(msgs); lo += benchBatch {
		if _, err := store.InsertBatch(context.Background(), msgs[lo:min(lo+benchBatch, len(msgs))]); err != nil {
			b.Fatal(err)
		}
	}
	d := time.Since(start)
	b.StopTimer()
	storeRate, rawRate := float64(len(msgs))/d.Seconds(), float64(len(msgs))/rawDur.Seconds()
	b.ReportMetric(storeRate, "store_rows/s")
	b.ReportMetric(rawRate, "raw_rows/s")
	b.ReportMetric(storeRate/rawRate, "ratio")
}

// benchMsgs are n sales of benchStores stores replaying at once, each in
// runs of 500 (the edge's hq.batch_size), benchTerminals terminals per
// store.
func benchMsgs(b *testing.B, n int) []hqdb.Msg {
	msgs := make([]hqdb.Msg, n)
	now := time.Now()
	flows := map[string]int{}
	for i := range msgs {
		store := fmt.Sprintf("S%03d", (i/500)%benchStores)
		flows[store]++
		msgs[i] = sale{store: store, flow: fmt.Sprint(flows[store]), cents: int64(i), terminal: fmt.Sprintf("T%02d", i%benchTerminals), created: now}.msg(b, now)
	}
	return msgs
}

func benchIngest(b *testing.B, newDSN func(b *testing.B) string, raw func(b *testing.B, dsn string, msgs []hqdb.Msg) time.Duration) {
	n := b.N
	msgs := benchMsgs(b, n)
	rawDur := raw(b, newDSN(b), msgs)

	nt := testenv.StartNATS(b)
	_, js := connect(b, nt.URL())
	cfg := hq.DefaultConfig()
	cfg.NATSURL, cfg.Database, cfg.BatchSize = nt.URL(), newDSN(b), benchBatch
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.Stream, Subjects: []string{cfg.SubjectPrefix + ".>"},
		Storage: jetstream.FileStorage, Duplicates: cfg.DuplicateWindow}); err != nil {
		b.Fatal(err)
	}
	for i, m := range msgs {
		if i%2000 == 0 {
			// Below nats.go's cap on outstanding async publishes.
			<-js.PublishAsyncComplete()
		}
		if _, err := js.PublishMsgAsync(txnMsg(m.StoreID, wire.MsgID(m.StoreID, m.Txn.FlowNo), m.Body)); err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()

	log := testLogger(b)
	store, err := hq.OpenStore(ctx, cfg.Database, hqdb.StoreOptions{Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	metrics := hq.NewMetrics(store, "bench", log)
	recv := hq.NewReceiver(cfg, store, metrics, log, "")
	done := make(chan error, 1)
	b.ResetTimer()
	go func() { done <- recv.Run(ctx) }()
	for recv.Ready() != nil {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	deadline := start.Add(10 * time.Minute)
	for metrics.Counts().Ingested < float64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("ingested %v of %d", metrics.Counts().Ingested, n)
		}
		time.Sleep(time.Millisecond)
	}
	hqDur := time.Since(start)
	b.StopTimer()
	cancel()
	<-done

	batches, commitSecs := hq.CommitStats(metrics)

	hqRate, rawRate := float64(n)/hqDur.Seconds(), float64(n)/rawDur.Seconds()
	if batches > 0 {
		// Whether the time is in the database or around it.
		b.ReportMetric(float64(n)/float64(batches), "rows/batch")
		b.ReportMetric(commitSecs/hqDur.Seconds(), "commit_share")
	}
	b.ReportMetric(hqRate, "hq_rows/s")
	b.ReportMetric(rawRate, "raw_rows/s")
	b.ReportMetric(hqRate/rawRate, "ratio")
}

// rawTable is the contract's transactions table and nothing else.
const rawTable = `CREATE TABLE transactions (
	store_id TEXT NOT NULL, flow_no TEXT NOT NULL, terminal_id TEXT NOT NULL, kind TEXT NOT NULL,
	total_cents %s NOT NULL, created_at TEXT NOT NULL, body TEXT NOT NULL, received_at TEXT NOT NULL,
	PRIMARY KEY (store_id, flow_no))`

// rawSQLite inserts msgs in transactions of benchBatch rows, each chunk
// of rawMultiRows rows one prepared multi-row INSERT (prepared once), with
// the pragmas posedge-hq uses: the strongest plain insert SQLite has.
func rawSQLite(b *testing.B, dsn string, msgs []hqdb.Msg) time.Duration {
	u, _ := hq.ParseDatabaseURL(dsn)
	db, err := sql.Open("sqlite", sqlite.DSN(u.Path))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(fmt.Sprintf(rawTable, "INTEGER")); err != nil {
		b.Fatal(err)
	}
	stmts := map[int]*sql.Stmt{}
	prepared := func(n int) *sql.Stmt {
		if st := stmts[n]; st != nil {
			return st
		}
		st, err := db.Prepare("INSERT INTO transactions VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?), ", n), ", "))
		if err != nil {
			b.Fatal(err)
		}
		stmts[n] = st
		return st
	}
	for n := rawMultiRows; n > 0; n /= 2 {
		prepared(n)
	}
	start := time.Now()
	for lo := 0; lo < len(msgs); lo += benchBatch {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		batch := msgs[lo:min(lo+benchBatch, len(msgs))]
		for len(batch) > 0 {
			n := rawMultiRows
			for n > len(batch) {
				n /= 2
			}
			args := make([]any, 0, 8*n)
			for _, m := range batch[:n] {
				args = append(args, m.StoreID, m.Txn.FlowNo, m.Txn.TerminalID, m.Txn.Kind, m.Txn.TotalCents,
					m.Txn.CreatedAt, string(m.Body), m.ReceivedAt.Format(time.RFC3339Nano))
			}
			if _, err := tx.Stmt(prepared(n)).Exec(args...); err != nil {
				b.Fatal(err)
			}
			batch = batch[n:]
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// rawMultiRows is the most rows of one raw SQLite insert (as many as
// posedge-hq's own multi-row insert takes).
const rawMultiRows = 128

// rawPostgres copies msgs in transactions of benchBatch rows, each one
// COPY into the table: the fastest way rows go into PostgreSQL.
func rawPostgres(b *testing.B, dsn string, msgs []hqdb.Msg) time.Duration {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, fmt.Sprintf(rawTable, "BIGINT")); err != nil {
		b.Fatal(err)
	}
	cols := []string{"store_id", "flow_no", "terminal_id", "kind", "total_cents", "created_at", "body", "received_at"}
	start := time.Now()
	for lo := 0; lo < len(msgs); lo += benchBatch {
		chunk := msgs[lo:min(lo+benchBatch, len(msgs))]
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"transactions"}, cols, pgx.CopyFromSlice(len(chunk), func(i int) ([]any, error) {
			m := &chunk[i]
			return []any{m.StoreID, m.Txn.FlowNo, m.Txn.TerminalID, m.Txn.Kind, m.Txn.TotalCents,
				m.Txn.CreatedAt, string(m.Body), m.ReceivedAt.Format(time.RFC3339Nano)}, nil
		})); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// The shape of benchMsgs: make bench's store (bench/figures_test.go, one
// store of 50 terminals), so that a batch touches as many day_totals rows
// as posedge-hq's does there; it was ten stores of seven terminals, which
// hid the per-terminal day statements (issue 26).
const benchStores, benchTerminals = 1, 50
