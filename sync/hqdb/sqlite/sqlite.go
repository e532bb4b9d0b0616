package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/posedge/posedge/internal/privfile"
	"github.com/posedge/posedge/sync/hqdb"
	_ "modernc.org/sqlite"
)

// sqliteSchema is HQ's tables in SQLite's types: times as text in
// tsLayout, so that text order is time order.
var sqliteSchema = append(hqdb.Schema(hqdb.ColumnTypes{Int: "INTEGER", Time: "TEXT", NullTime: "TEXT NOT NULL", JSON: "TEXT"}),
	// A row deleted by hand (rows lost at HQ) leaves its day short in
	// day_totals, as it is in transactions: GET /v1/completeness shows
	// the day incomplete, the store's audit resends the row, and its
	// insert counts it again, once (docs/hq-sync.md, "Incomplete days
	// repair themselves").
	`CREATE TRIGGER IF NOT EXISTS transactions_deleted AFTER DELETE ON transactions BEGIN
		UPDATE day_totals SET
			sales = sales - (old.kind != 'refund'),
			sales_cents = sales_cents - CASE WHEN old.kind != 'refund' THEN old.total_cents ELSE 0 END,
			refunds = refunds - (old.kind = 'refund'),
			refund_cents = refund_cents - CASE WHEN old.kind = 'refund' THEN old.total_cents ELSE 0 END
		WHERE store_id = old.store_id AND terminal_id = old.terminal_id AND business_date = old.business_date;
		UPDATE stores SET txn_count = txn_count - 1 WHERE store_id = old.store_id;
	END`,
)

// Store keeps HQ's tables in one SQLite file in WAL mode (other
// processes may read it while posedge-hq runs). Writes go through one
// connection; reads use a pool of their own.
type Store struct {
	hqdb.Reader // every read, on the reader pool
	path        string
	w           *sql.DB // the one writer
	r           *sql.DB
	mu          sync.Mutex // one batch at a time on w
	opts        hqdb.StoreOptions
	st          sqliteStmts // prepared once on w
	// multi holds the multi-row inserts of 1, 2, 4 … sqliteMultiRows
	// transactions by their row count, prepared at open: the one writer
	// connection cannot prepare while a batch's transaction holds it.
	multi map[int]*sql.Stmt
	// multiDay holds the multi-row day_totals upserts of 1, 2, 4 …
	// sqliteMultiDays rows the same way: a batch of one store's 50
	// terminals is one or two statements, not 50 (issue 26).
	multiDay map[int]*sql.Stmt
	// plain holds the same inserts as multi without RETURNING: a chunk of
	// new rows (all of them, nearly always) goes in without a result row
	// to step and scan per row; see insertTxns.
	plain map[int]*sql.Stmt
	// returned counts the chunks that needed RETURNING to tell which rows
	// went in (a key stored already or repeated in the batch).
	returned atomic.Int64
}

// sqliteStmts are the writer's statements, prepared once: SQLite spends
// more parsing a statement than running it.
type sqliteStmts struct {
	storedBody, insertConflict, upsertManifest, upsertHeartbeat, upsertStore *sql.Stmt
	insertQuarantine, readDays, insertAdjustment                             *sql.Stmt
	savepoint, rollbackTo, release                                           *sql.Stmt
}

func (st *sqliteStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		dst **sql.Stmt
		q   string
	}{
		{&st.storedBody, "SELECT body FROM transactions WHERE store_id = ? AND flow_no = ?"},
		{&st.insertConflict, hqdb.InsertConflictSQL},
		{&st.upsertManifest, hqdb.UpsertManifestSQL},
		{&st.upsertHeartbeat, hqdb.UpsertHeartbeatSQL},
		{&st.upsertStore, sqliteUpsertStore},
		{&st.insertAdjustment, hqdb.InsertAdjustmentSQL},
		{&st.insertQuarantine, hqdb.InsertQuarantineSQL},
		{&st.readDays, sqliteReadDays},
		{&st.savepoint, "SAVEPOINT posedge_chunk"},
		{&st.rollbackTo, "ROLLBACK TO posedge_chunk"},
		{&st.release, "RELEASE posedge_chunk"},
	} {
		stmt, err := db.PrepareContext(ctx, p.q)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		*p.dst = stmt
	}
	return nil
}

var _ hqdb.Store = (*Store)(nil)

// DSN is the modernc.org/sqlite data source name posedge-hq uses
// for path: WAL, synchronous FULL, a 10 s busy timeout and immediate
// write transactions.
func DSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Set("_txlock", "immediate")
	return "file:" + path + "?" + q.Encode()
}

// OpenSQLite opens or creates the SQLite database at path.
func Open(ctx context.Context, path string, opts hqdb.StoreOptions) (*Store, error) {
	opts = opts.WithDefaults()
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
	}
	// Mode 0600 whatever the umask, and tightened if an older version or
	// a copy left it wider (issue 22 finding 9).
	tightened, err := privfile.Ensure(path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if len(tightened) > 0 {
		opts.Logger.Warn("database files were readable by other users; made private (mode 0600)", "files", tightened)
	}
	w, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	s := &Store{path: path, w: w, opts: opts}
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if err := s.st.prepare(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if err := s.prepareMulti(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	s.r = r
	s.Reader = hqdb.Reader{Scan: scan(), SilentAfter: opts.SilentAfter,
		Query: func(ctx context.Context, q string, args ...any) (hqdb.ClosingRows, error) {
			return r.QueryContext(ctx, q, args...)
		},
		TimeArg: func(t time.Time) any { return formatTS(t) }}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	defer tx.Rollback()
	for _, q := range sqliteSchema {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	if err := checkSchemaVersion(ctx, tx, "INSERT INTO hq_schema (version) VALUES (?)"); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	return nil
}

type queryExecer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func checkSchemaVersion(ctx context.Context, tx queryExecer, insert string) error {
	var v int
	err := tx.QueryRowContext(ctx, "SELECT version FROM hq_schema").Scan(&v)
	found := !errors.Is(err, sql.ErrNoRows)
	if !found {
		err = nil
	}
	record, err := hqdb.CheckSchemaVersion(v, found, err)
	if record {
		if _, err := tx.ExecContext(ctx, insert, hqdb.SchemaVersion); err != nil {
			return fmt.Errorf("record schema version: %w", err)
		}
	}
	return err
}

// Close closes the database.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// Ping tells whether the database file answers.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM hq_schema").Scan(&n); err != nil {
		return fmt.Errorf("sqlite %s: %w", s.path, err)
	}
	return nil
}

const (
	// CAST: a row written by an older posedge-hq whose sum overflowed
	// into REAL reads as the nearest integer rather than failing.
	// One read per store and business day of a batch, every terminal
	// of it: a batch holds one or a few store-days and up to all their
	// terminals, so this is one statement where one per terminal was.
	sqliteReadDays = `SELECT terminal_id, CAST(sales AS INTEGER), CAST(sales_cents AS INTEGER),
		CAST(refunds AS INTEGER), CAST(refund_cents AS INTEGER)
		FROM day_totals WHERE store_id = ? AND business_date = ?`
	sqliteUpsertStore = `INSERT INTO stores
		(store_id, txn_count, max_flow_no, last_created_at, last_received_at, last_seen_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (store_id) DO UPDATE SET
			txn_count = stores.txn_count + excluded.txn_count,
			max_flow_no = CASE WHEN length(excluded.max_flow_no) > length(stores.max_flow_no)
				OR (length(excluded.max_flow_no) = length(stores.max_flow_no) AND excluded.max_flow_no > stores.max_flow_no)
				THEN excluded.max_flow_no ELSE stores.max_flow_no END,
			last_created_at = max(stores.last_created_at, excluded.last_created_at),
			last_received_at = max(stores.last_received_at, excluded.last_received_at),
			last_seen_at = max(stores.last_seen_at, excluded.last_seen_at)`
)

// InsertBatch stores msgs in one transaction.
func (s *Store) InsertBatch(ctx context.Context, msgs []hqdb.Msg) ([]hqdb.Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("insert batch: begin: %w", err)
	}
	defer tx.Rollback()
	out := make([]hqdb.Outcome, len(msgs))
	delta := hqdb.NewBatchDelta()
	stored, err := s.readDays(ctx, tx, msgs)
	if err != nil {
		return nil, fmt.Errorf("insert batch: %w", err)
	}
	guard := hqdb.NewDayGuard(func(k hqdb.DayKey) (hqdb.Totals, error) { return stored[k], nil })
	// Transactions to store go in multi-row inserts after this loop;
	// everything else is decided here, in order.
	var rows []int
	for i := range msgs {
		m := &msgs[i]
		var o hqdb.Outcome
		switch m.Kind {
		case hqdb.KindTxn:
			reason, detail := m.Quarantine, m.QuarantineDetail
			if reason == "" {
				var fits bool
				if fits, err = guard.Admit(m); err != nil {
					break
				}
				if !fits {
					reason, detail = hqdb.QuarantineDayOverflow, hqdb.DayOverflowDetail(m)
				}
			}
			if reason != "" {
				o, err = upsert(ctx, tx.StmtContext(ctx, s.st.insertQuarantine), m.StoreID, m.Txn.FlowNo, hqdb.BodyHash(m.Body),
					reason, detail, string(m.Body), formatTS(m.ReceivedAt))
				if o == hqdb.Inserted {
					o = hqdb.Quarantined
				}
				break
			}
			rows = append(rows, i)
			continue
		case hqdb.KindManifest:
			o, err = upsert(ctx, tx.StmtContext(ctx, s.st.upsertManifest), m.StoreID, m.Manifest.TerminalID, m.Manifest.Date,
				m.Manifest.Sales, m.Manifest.SalesCents, m.Manifest.Refunds, m.Manifest.RefundCents,
				m.Manifest.FirstFlowNo, m.Manifest.LastFlowNo, formatTS(m.SentAt), formatTS(m.ReceivedAt), string(m.Body))
		case hqdb.KindHeartbeat:
			o, err = upsert(ctx, tx.StmtContext(ctx, s.st.upsertHeartbeat), m.StoreID, formatTS(m.SentAt), formatTS(m.ReceivedAt),
				m.Heartbeat.Backlog, m.Heartbeat.OldestUnsent, m.Heartbeat.Version, string(m.Body))
		case hqdb.KindStockAdjustment:
			a := m.Adjustment
			o, err = upsert(ctx, tx.StmtContext(ctx, s.st.insertAdjustment), m.StoreID, a.AdjustmentID, a.Barcode, a.Delta,
				a.Reason, formatTS(m.CreatedAt), string(m.Body), formatTS(m.ReceivedAt))
		default:
			err = fmt.Errorf("message %d: unknown kind %v", i, m.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("insert batch: %w", err)
		}
		out[i] = o
	}
	if err := s.insertTxns(ctx, tx, msgs, rows, out); err != nil {
		return nil, fmt.Errorf("insert batch: %w", err)
	}
	for i := range msgs {
		delta.Add(&msgs[i], out[i])
	}
	upStore := tx.StmtContext(ctx, s.st.upsertStore)
	for _, d := range delta.SortedStores() {
		var created, received string
		if d.HasTxn {
			created, received = formatTS(d.LastCreated), formatTS(d.LastReceived)
		}
		if _, err := upStore.ExecContext(ctx, d.ID, d.Inserted, d.MaxFlowNo, created, received, formatTS(d.LastSeen)); err != nil {
			return nil, fmt.Errorf("insert batch: update store %s: %w", d.ID, err)
		}
	}
	if err := s.upsertDays(ctx, tx, delta.SortedDays()); err != nil {
		return nil, fmt.Errorf("insert batch: update day totals: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("insert batch: commit: %w", err)
	}
	return out, nil
}

// sqliteMultiRows is the most rows one multi-row insert takes (9
// variables each, well below SQLite's limit of 32766); a power of two.
const sqliteMultiRows = 128

// insertTxns inserts the transactions msgs[rows] with multi-row inserts
// and sets their outcomes: inserted, or, for a key already stored (or
// inserted earlier in the batch), duplicate or conflict by the stored
// body.
//
// A chunk whose keys are new to the batch first goes in without
// RETURNING, under a savepoint: when SQLite says it inserted every row,
// each one is inserted. Otherwise (a redelivery: some key is stored
// already) the chunk is rolled back to the savepoint and inserted again
// with RETURNING, which names the rows that went in. Most chunks are all
// new; RETURNING cost a result row stepped and scanned per row (issue 26).
func (s *Store) insertTxns(ctx context.Context, tx *sql.Tx, msgs []hqdb.Msg, rows []int, out []hqdb.Outcome) error {
	first := make(map[hqdb.TxnKey]int, len(rows))
	for lo := 0; lo < len(rows); {
		// The greatest prepared size that fits: 300 rows go in as
		// 128 + 128 + 32 + 8 + 4.
		n := sqliteMultiRows
		for n > len(rows)-lo {
			n /= 2
		}
		chunk := rows[lo : lo+n]
		lo += n
		args := make([]any, 0, 9*len(chunk))
		repeats := false
		for _, i := range chunk {
			m := &msgs[i]
			t := m.Txn
			args = append(args, m.StoreID, t.FlowNo, t.TerminalID, t.Kind, t.TotalCents,
				formatTS(m.CreatedAt), string(m.Body), formatTS(m.ReceivedAt), m.Day)
			k := hqdb.TxnKey{Store: m.StoreID, Flow: t.FlowNo}
			if _, ok := first[k]; ok {
				repeats = true
			} else {
				first[k] = i
			}
		}
		if !repeats {
			all, err := s.insertAllNew(ctx, tx, n, args)
			if err != nil {
				return fmt.Errorf("insert %d transactions: %w", len(chunk), err)
			}
			if all {
				for _, i := range chunk {
					out[i] = hqdb.Inserted
				}
				continue
			}
		}
		s.returned.Add(1)
		res, err := tx.StmtContext(ctx, s.multi[n]).QueryContext(ctx, args...)
		if err != nil {
			return fmt.Errorf("insert %d transactions: %w", len(chunk), err)
		}
		for res.Next() {
			var k hqdb.TxnKey
			if err := res.Scan(&k.Store, &k.Flow); err != nil {
				res.Close()
				return fmt.Errorf("insert %d transactions: %w", len(chunk), err)
			}
			// VALUES are inserted in order: of repeats, the first is.
			out[first[k]] = hqdb.Inserted
		}
		res.Close()
		if err := res.Err(); err != nil {
			return fmt.Errorf("insert %d transactions: %w", len(chunk), err)
		}
	}
	for _, i := range rows {
		if out[i] != 0 {
			continue
		}
		m := &msgs[i]
		t := m.Txn
		var stored string
		if err := tx.StmtContext(ctx, s.st.storedBody).QueryRowContext(ctx, m.StoreID, t.FlowNo).Scan(&stored); err != nil {
			return fmt.Errorf("read stored %s/%s: %w", m.StoreID, t.FlowNo, err)
		}
		if hqdb.SameBody([]byte(stored), m.Body) {
			out[i] = hqdb.Duplicate
			continue
		}
		if _, err := tx.StmtContext(ctx, s.st.insertConflict).ExecContext(ctx, m.StoreID, t.FlowNo, hqdb.BodyHash(m.Body), t.TerminalID,
			t.Kind, t.TotalCents, formatTS(m.CreatedAt), string(m.Body), formatTS(m.ReceivedAt)); err != nil {
			return fmt.Errorf("record conflict %s/%s: %w", m.StoreID, t.FlowNo, err)
		}
		out[i] = hqdb.Conflict
	}
	return nil
}

// readDays reads the stored day totals of the days msgs' transactions
// fall on, one statement per store and business day.
func (s *Store) readDays(ctx context.Context, tx *sql.Tx, msgs []hqdb.Msg) (map[hqdb.DayKey]hqdb.Totals, error) {
	type storeDay struct{ store, date string }
	var asked []storeDay
	for i := range msgs {
		m := &msgs[i]
		if m.Kind != hqdb.KindTxn || m.Quarantine != "" {
			continue
		}
		sd := storeDay{m.StoreID, m.Day}
		if !slices.Contains(asked, sd) {
			asked = append(asked, sd)
		}
	}
	stored := make(map[hqdb.DayKey]hqdb.Totals)
	if len(asked) == 0 {
		return stored, nil
	}
	read := tx.StmtContext(ctx, s.st.readDays)
	for _, sd := range asked {
		if err := func() error {
			rows, err := read.QueryContext(ctx, sd.store, sd.date)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				k := hqdb.DayKey{Store: sd.store, Date: sd.date}
				var t hqdb.Totals
				if err := rows.Scan(&k.Terminal, &t.Sales, &t.SalesCents, &t.Refunds, &t.RefundCents); err != nil {
					return err
				}
				stored[k] = t
			}
			return rows.Err()
		}(); err != nil {
			return nil, fmt.Errorf("read day totals of %s/%s: %w", sd.store, sd.date, err)
		}
	}
	return stored, nil
}

// sqliteMultiDays is the most rows of one day_totals upsert (7
// variables each); a power of two.
const sqliteMultiDays = 64

// upsertDays adds days to day_totals with multi-row upserts, in the
// order given.
func (s *Store) upsertDays(ctx context.Context, tx *sql.Tx, days []*hqdb.DayDelta) error {
	for len(days) > 0 {
		n := sqliteMultiDays
		for n > len(days) {
			n /= 2
		}
		args := make([]any, 0, 7*n)
		for _, d := range days[:n] {
			args = append(args, d.Store, d.Terminal, d.Date, d.Sales, d.SalesCents, d.Refunds, d.RefundCents)
		}
		if _, err := tx.StmtContext(ctx, s.multiDay[n]).ExecContext(ctx, args...); err != nil {
			return err
		}
		days = days[n:]
	}
	return nil
}

// insertAllNew inserts n rows of args without RETURNING and reports
// true when every one went in; otherwise it undoes the insert and
// reports false, for the caller to insert them with RETURNING.
func (s *Store) insertAllNew(ctx context.Context, tx *sql.Tx, n int, args []any) (bool, error) {
	if _, err := tx.StmtContext(ctx, s.st.savepoint).ExecContext(ctx); err != nil {
		return false, err
	}
	res, err := tx.StmtContext(ctx, s.plain[n]).ExecContext(ctx, args...)
	if err != nil {
		return false, err
	}
	inserted, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	if inserted != int64(n) {
		if _, err := tx.StmtContext(ctx, s.st.rollbackTo).ExecContext(ctx); err != nil {
			return false, err
		}
	}
	if _, err := tx.StmtContext(ctx, s.st.release).ExecContext(ctx); err != nil {
		return false, err
	}
	return inserted == int64(n), nil
}

// ReturnedChunks counts the chunks of transactions that were inserted
// with RETURNING (some key already stored, or repeated in the batch)
// rather than in one plain insert.
func (s *Store) ReturnedChunks() int64 { return s.returned.Load() }

// prepareMulti prepares the multi-row inserts.
func (s *Store) prepareMulti(ctx context.Context) error {
	s.multi, s.plain = map[int]*sql.Stmt{}, map[int]*sql.Stmt{}
	for n := 1; n <= sqliteMultiRows; n *= 2 {
		q := `INSERT INTO transactions
		(store_id, flow_no, terminal_id, kind, total_cents, created_at, body, received_at, business_date) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ") +
			" ON CONFLICT (store_id, flow_no) DO NOTHING"
		for _, p := range []struct {
			to map[int]*sql.Stmt
			q  string
		}{{s.plain, q}, {s.multi, q + " RETURNING store_id, flow_no"}} {
			st, err := s.w.PrepareContext(ctx, p.q)
			if err != nil {
				return fmt.Errorf("prepare the insert of %d transactions: %w", n, err)
			}
			p.to[n] = st
		}
	}
	s.multiDay = map[int]*sql.Stmt{}
	for n := 1; n <= sqliteMultiDays; n *= 2 {
		q := `INSERT INTO day_totals
		(store_id, terminal_id, business_date, sales, sales_cents, refunds, refund_cents) VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?), ", n), ", ") + hqdb.DayTotalsAdd
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare the upsert of %d day totals: %w", n, err)
		}
		s.multiDay[n] = st
	}
	return nil
}

func upsert(ctx context.Context, stmt *sql.Stmt, args ...any) (hqdb.Outcome, error) {
	res, err := stmt.ExecContext(ctx, args...)
	if err != nil {
		return 0, err
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, err
	} else if n == 0 {
		return hqdb.Duplicate, nil
	}
	return hqdb.Inserted, nil
}

// haveChunk bounds the number of SQL variables of one query.
const haveChunk = 500

// Have returns those of flowNos stored for storeID, in the order asked.
func (s *Store) Have(ctx context.Context, storeID string, flowNos []string) ([]string, error) {
	held := make(map[string]bool, len(flowNos))
	for start := 0; start < len(flowNos); start += haveChunk {
		chunk := flowNos[start:min(start+haveChunk, len(flowNos))]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, storeID)
		for _, f := range chunk {
			args = append(args, f)
		}
		// A row HQ set aside in its quarantine is held too: it reached
		// HQ, a person decides; resending it would change nothing.
		nums := make([]string, len(chunk))
		for i := range chunk {
			nums[i] = "?" + strconv.Itoa(i+2)
		}
		in := "flow_no IN (" + strings.Join(nums, ", ") + ")"
		q := "SELECT flow_no FROM transactions WHERE store_id = ?1 AND " + in +
			" UNION SELECT flow_no FROM quarantine WHERE store_id = ?1 AND " + in
		rows, err := s.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("have %s: %w", storeID, err)
		}
		err = scan().FlowNos(rows, held)
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("have %s: %w", storeID, err)
		}
	}
	return hqdb.InOrder(flowNos, held), nil
}

// tsLayout is how SQLite keeps times: UTC with a fixed number of digits,
// so that text order is time order.
const tsLayout = "2006-01-02T15:04:05.000000000Z"

func formatTS(t time.Time) string { return t.UTC().Format(tsLayout) }

// scan reads the shared SELECTs with SQLite's text times.
func scan() hqdb.Scanner {
	return hqdb.Scanner{Time: func() hqdb.TimeColumn { return new(textTime) }}
}

// textTime is a timestamp column as SQLite keeps it (tsLayout); NULL and
// text that is not a time read as zero.
type textTime sql.NullString

func (t *textTime) Dest() any { return (*sql.NullString)(t) }

func (t *textTime) Time() time.Time { return parseTS(t.String) }

func parseTS(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}
