package hq_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
)

// BenchmarkPostgresInsertShapes times three ways of putting the same
// rows into HQ's own transactions table (JSON body, timestamptz), without
// the rest of a batch (stores, day_totals, the conflict check): COPY
// straight in, the unnest INSERT … ON CONFLICT … RETURNING posedge-hq
// uses, and COPY into a temporary staging table then INSERT … SELECT
// (issue 26's lever). Compare with BenchmarkInsertBatch/postgres:
//
//	go test -run '^$' -bench 'PostgresInsertShapes|InsertBatch/postgres' -benchtime 20000x ./sync/hq/
func BenchmarkPostgresInsertShapes(b *testing.B) {
	pg := testenv.StartPostgres(b)
	msgs := benchMsgs(b, b.N)
	ctx := context.Background()
	run := func(name string, f func(conn *pgx.Conn, chunk []hqdb.Msg)) {
		dsn := pg.NewDatabase(b)
		s, err := hq.OpenStore(ctx, dsn, hqdb.StoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		start := time.Now()
		for lo := 0; lo < len(msgs); lo += benchBatch {
			f(conn, msgs[lo:min(lo+benchBatch, len(msgs))])
		}
		b.ReportMetric(float64(len(msgs))/time.Since(start).Seconds(), name+"_rows/s")
	}
	cols := []string{"store_id", "flow_no", "terminal_id", "kind", "total_cents", "created_at", "body", "received_at", "business_date"}
	src := func(chunk []hqdb.Msg) pgx.CopyFromSource {
		return pgx.CopyFromSlice(len(chunk), func(i int) ([]any, error) {
			m := &chunk[i]
			return []any{m.StoreID, m.Txn.FlowNo, m.Txn.TerminalID, m.Txn.Kind, m.Txn.TotalCents, m.CreatedAt, string(m.Body), m.ReceivedAt, m.Day}, nil
		})
	}
	run("copy_hqtable", func(conn *pgx.Conn, chunk []hqdb.Msg) {
		if _, err := conn.CopyFrom(ctx, pgx.Identifier{"transactions"}, cols, src(chunk)); err != nil {
			b.Fatal(err)
		}
	})
	run("unnest_hqtable", func(conn *pgx.Conn, chunk []hqdb.Msg) {
		var s, f, t, k, body, d []string
		var cents []int64
		var ca, ra []time.Time
		for _, m := range chunk {
			s, f, t, k, body, d = append(s, m.StoreID), append(f, m.Txn.FlowNo), append(t, m.Txn.TerminalID), append(k, m.Txn.Kind), append(body, string(m.Body)), append(d, m.Day)
			cents, ca, ra = append(cents, m.Txn.TotalCents), append(ca, m.CreatedAt), append(ra, m.ReceivedAt)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO transactions (store_id, flow_no, terminal_id, kind, total_cents, created_at, body, received_at, business_date)
			SELECT s, f, t, k, c, ca, b::json, ra, d FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[], $7::text[], $8::timestamptz[], $9::text[]) AS u(s, f, t, k, c, ca, b, ra, d)
			ON CONFLICT (store_id, flow_no) DO NOTHING RETURNING store_id, flow_no`, s, f, t, k, cents, ca, body, ra, d); err != nil {
			b.Fatal(err)
		}
	})
	run("staging_copy_then_insert", func(conn *pgx.Conn, chunk []hqdb.Msg) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS stage (store_id text, flow_no text, terminal_id text, kind text, total_cents bigint, created_at timestamptz, body text, received_at timestamptz, business_date text) ON COMMIT DELETE ROWS`); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"stage"}, cols, src(chunk)); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO transactions SELECT store_id, flow_no, terminal_id, kind, total_cents, created_at, body::json, received_at, business_date FROM stage ON CONFLICT (store_id, flow_no) DO NOTHING`); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	})
}
