package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/posedge/posedge/sync/hqdb"
)

// postgresSchema is HQ's tables in PostgreSQL's types, and the function
// the one-round-trip ingest raises to fall back (pgingest.go).
var postgresSchema = append(hqdb.Schema(hqdb.ColumnTypes{Int: "BIGINT", Time: "TIMESTAMPTZ", NullTime: "TIMESTAMPTZ", JSON: "JSON"}),
	pgNeedsCareFunc,
	// A row deleted by hand (rows lost at HQ) leaves its day short in
	// day_totals, as it is in transactions: GET /v1/completeness shows
	// the day incomplete, the store's audit resends the row, and its
	// insert counts it again, once (docs/hq-sync.md, "Incomplete days
	// repair themselves"). TRUNCATE fires no row trigger.
	`CREATE OR REPLACE FUNCTION posedge_transaction_deleted() RETURNS trigger
	LANGUAGE plpgsql AS $$
	BEGIN
		UPDATE day_totals SET
			sales = sales - CASE WHEN OLD.kind != 'refund' THEN 1 ELSE 0 END,
			sales_cents = sales_cents - CASE WHEN OLD.kind != 'refund' THEN OLD.total_cents ELSE 0 END,
			refunds = refunds - CASE WHEN OLD.kind = 'refund' THEN 1 ELSE 0 END,
			refund_cents = refund_cents - CASE WHEN OLD.kind = 'refund' THEN OLD.total_cents ELSE 0 END
		WHERE store_id = OLD.store_id AND terminal_id = OLD.terminal_id AND business_date = OLD.business_date;
		UPDATE stores SET txn_count = txn_count - 1 WHERE store_id = OLD.store_id;
		RETURN NULL;
	END $$`,
	`CREATE OR REPLACE TRIGGER transactions_deleted AFTER DELETE ON transactions
		FOR EACH ROW EXECUTE FUNCTION posedge_transaction_deleted()`,
)

// schemaLock is the advisory lock key that serialises schema creation
// among posedge-hq processes starting together.
const schemaLock = 0x706f736564676501

// Store keeps HQ's tables in PostgreSQL; any number of
// posedge-hq processes may share one database.
type Store struct {
	hqdb.Reader
	pool *pgxpool.Pool
	opts hqdb.StoreOptions
	// careful counts the batches that could not be stored in one round
	// trip (conflicts, quarantine, near-overflow).
	careful atomic.Int64
	// storedKey counts the batches whose plain insert met a key stored
	// already and were sent again with ON CONFLICT (pgingest.go);
	// skipFresh is how many batches after one go with ON CONFLICT at
	// once: redeliveries come in runs (a resend, a restart).
	storedKey atomic.Int64
	skipFresh atomic.Int64
}

var _ hqdb.Store = (*Store)(nil)

// OpenPostgres connects to the database at url (postgres://…) and
// creates the tables when missing.
func Open(ctx context.Context, url string, opts hqdb.StoreOptions) (*Store, error) {
	opts = opts.WithDefaults()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errors.New("open postgres: not a valid PostgreSQL URL")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	s := &Store{pool: pool, opts: opts}
	s.Reader = hqdb.Reader{Scan: scan(), SilentAfter: opts.SilentAfter,
		Query: func(ctx context.Context, q string, args ...any) (hqdb.ClosingRows, error) {
			rows, err := pool.Query(ctx, hqdb.Rebind(q), args...)
			if err != nil {
				return nil, err
			}
			return closingRows{rows}, nil
		},
		TimeArg: func(t time.Time) any { return t }}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres %s@%s/%s: %w", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Database, err)
	}
	return s, nil
}

func (s *Store) migrate(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		for _, q := range postgresSchema {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("create schema: %w", err)
			}
		}
		var v int
		err := tx.QueryRow(ctx, "SELECT version FROM hq_schema").Scan(&v)
		found := !errors.Is(err, pgx.ErrNoRows)
		if !found {
			err = nil
		}
		record, err := hqdb.CheckSchemaVersion(v, found, err)
		if record {
			if _, err := tx.Exec(ctx, "INSERT INTO hq_schema (version) VALUES ($1)", hqdb.SchemaVersion); err != nil {
				return fmt.Errorf("record schema version: %w", err)
			}
		}
		return err
	})
}

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Ping tells whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM hq_schema").Scan(&n); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// The one-row statements shared with SQLite, in PostgreSQL's placeholders.
var (
	pgInsertConflict   = hqdb.Rebind(hqdb.InsertConflictSQL)
	pgInsertQuarantine = hqdb.Rebind(hqdb.InsertQuarantineSQL)
	pgInsertAdjustment = hqdb.Rebind(hqdb.InsertAdjustmentSQL)
	pgUpsertManifest   = hqdb.Rebind(hqdb.UpsertManifestSQL)
	pgUpsertHeartbeat  = hqdb.Rebind(hqdb.UpsertHeartbeatSQL)
)

const (
	pgInsertTxns = `INSERT INTO transactions
		(store_id, flow_no, terminal_id, kind, total_cents, created_at, body, received_at, business_date)
		SELECT s, f, t, k, c, ca, b::json, ra, d
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[],
			$7::text[], $8::timestamptz[], $9::text[]) AS u(s, f, t, k, c, ca, b, ra, d)
		ON CONFLICT (store_id, flow_no) DO NOTHING
		RETURNING store_id, flow_no`
	pgStoredBodies = `SELECT store_id, flow_no, body::text FROM transactions
		WHERE (store_id, flow_no) IN (SELECT * FROM unnest($1::text[], $2::text[]))`
	// The day rows a batch adds to, locked (in key order, as the upsert
	// takes them) until the batch commits: another posedge-hq adding to
	// the same day waits and then reads the sum this batch leaves.
	pgReadDays = `SELECT store_id, terminal_id, business_date, sales, sales_cents, refunds, refund_cents
		FROM day_totals WHERE (store_id, terminal_id, business_date) IN
			(SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
		ORDER BY store_id, terminal_id, business_date FOR UPDATE`
	// pgStoresMerge adds a batch's rows to a store's counts: the one
	// rule for both insert paths (pgUpsertStores and pgIngest).
	pgStoresMerge = `
		ON CONFLICT (store_id) DO UPDATE SET
			txn_count = stores.txn_count + excluded.txn_count,
			max_flow_no = CASE WHEN length(excluded.max_flow_no) > length(stores.max_flow_no)
				OR (length(excluded.max_flow_no) = length(stores.max_flow_no)
					AND excluded.max_flow_no COLLATE "C" > stores.max_flow_no COLLATE "C")
				THEN excluded.max_flow_no ELSE stores.max_flow_no END,
			last_created_at = GREATEST(stores.last_created_at, excluded.last_created_at),
			last_received_at = GREATEST(stores.last_received_at, excluded.last_received_at),
			last_seen_at = GREATEST(stores.last_seen_at, excluded.last_seen_at)`
	pgUpsertStores = `INSERT INTO stores
		(store_id, txn_count, max_flow_no, last_created_at, last_received_at, last_seen_at)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[])
` + pgStoresMerge
	pgUpsertDays = `INSERT INTO day_totals
		(store_id, terminal_id, business_date, sales, sales_cents, refunds, refund_cents)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])` + hqdb.DayTotalsAdd
)

// freshSkip is how many batches after one that met a stored key are
// sent with ON CONFLICT straight away.
const freshSkip = 16

// pgRetries is how often a batch is retried after a deadlock or a
// serialization failure with another posedge-hq process.
const pgRetries = 5

// InsertBatch stores msgs in one transaction: in one round trip when it
// can (ingest), else the careful way (insertBatch).
func (s *Store) InsertBatch(ctx context.Context, msgs []hqdb.Msg) ([]hqdb.Outcome, error) {
	careful := false
	for attempt := 1; ; attempt++ {
		var out []hqdb.Outcome
		var err error
		if !careful {
			fresh := s.skipFresh.Load() <= 0
			if !fresh {
				s.skipFresh.Add(-1)
			}
			out, err = s.ingest(ctx, msgs, fresh)
			if errors.Is(err, errStoredKey) {
				s.storedKey.Add(1)
				s.skipFresh.Store(freshSkip)
				out, err = s.ingest(ctx, msgs, false)
			}
			if errors.Is(err, errCareful) {
				s.careful.Add(1)
				careful, attempt = true, 0
				continue
			}
		} else {
			err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
				var err error
				out, err = s.insertBatch(ctx, tx, msgs)
				return err
			})
		}
		var pe *pgconn.PgError
		if err != nil && attempt < pgRetries && errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") {
			s.opts.Logger.Warn("batch retried", "err", err, "attempt", attempt)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("insert batch: %w", err)
		}
		return out, nil
	}
}

// txnColumns are transactions as the column arrays PostgreSQL's unnest
// takes: one parameter per column, one round trip for the batch.
type txnColumns struct {
	stores, flows, terms, kinds, days, bodies []string
	cents                                     []int64
	created, received                         []time.Time
}

// txnColumnsOf is the columns of msgs[i] for every i in which.
func txnColumnsOf(msgs []hqdb.Msg, which []int) txnColumns {
	n := len(which)
	c := txnColumns{stores: make([]string, n), flows: make([]string, n), terms: make([]string, n), kinds: make([]string, n),
		days: make([]string, n), bodies: make([]string, n), cents: make([]int64, n), created: make([]time.Time, n), received: make([]time.Time, n)}
	for j, i := range which {
		m := &msgs[i]
		c.stores[j], c.flows[j], c.terms[j], c.kinds[j], c.days[j] = m.StoreID, m.Txn.FlowNo, m.Txn.TerminalID, m.Txn.Kind, m.Day
		c.bodies[j], c.cents[j], c.created[j], c.received[j] = string(m.Body), m.Txn.TotalCents, m.CreatedAt, m.ReceivedAt
	}
	return c
}

func (s *Store) insertBatch(ctx context.Context, tx pgx.Tx, msgs []hqdb.Msg) ([]hqdb.Outcome, error) {
	if err := lockStores(ctx, tx, msgs); err != nil {
		return nil, err
	}
	out := make([]hqdb.Outcome, len(msgs))
	if err := s.quarantine(ctx, tx, msgs, out); err != nil {
		return nil, err
	}
	// The first message of each key goes into one INSERT, in key order
	// so that concurrent batches take row locks in the same order.
	first := map[hqdb.TxnKey]int{}
	var firsts []int
	for i := range msgs {
		if msgs[i].Kind != hqdb.KindTxn || out[i] != 0 {
			continue
		}
		k := hqdb.TxnKey{Store: msgs[i].StoreID, Flow: msgs[i].Txn.FlowNo}
		if _, ok := first[k]; !ok {
			first[k] = i
			firsts = append(firsts, i)
		}
	}
	slices.SortFunc(firsts, func(a, b int) int {
		return cmp.Or(cmp.Compare(msgs[a].StoreID, msgs[b].StoreID), cmp.Compare(msgs[a].Txn.FlowNo, msgs[b].Txn.FlowNo))
	})
	if len(firsts) > 0 {
		c := txnColumnsOf(msgs, firsts)
		rows, err := tx.Query(ctx, pgInsertTxns, c.stores, c.flows, c.terms, c.kinds, c.cents, c.created, c.bodies, c.received, c.days)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k hqdb.TxnKey
			if err := rows.Scan(&k.Store, &k.Flow); err != nil {
				rows.Close()
				return nil, err
			}
			out[first[k]] = hqdb.Inserted
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	// Every other transaction is a duplicate or a conflict: compare it
	// with the body stored under its key.
	var pending []int
	var pStores, pFlows []string
	for i := range msgs {
		if msgs[i].Kind == hqdb.KindTxn && out[i] == 0 {
			pending = append(pending, i)
			pStores, pFlows = append(pStores, msgs[i].StoreID), append(pFlows, msgs[i].Txn.FlowNo)
		}
	}
	if len(pending) > 0 {
		stored := map[hqdb.TxnKey]string{}
		rows, err := tx.Query(ctx, pgStoredBodies, pStores, pFlows)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k hqdb.TxnKey
			var body string
			if err := rows.Scan(&k.Store, &k.Flow, &body); err != nil {
				rows.Close()
				return nil, err
			}
			stored[k] = body
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for _, i := range pending {
			m := &msgs[i]
			body, ok := stored[hqdb.TxnKey{Store: m.StoreID, Flow: m.Txn.FlowNo}]
			if !ok {
				return nil, fmt.Errorf("%s/%s neither inserted nor stored", m.StoreID, m.Txn.FlowNo)
			}
			if hqdb.SameBody([]byte(body), m.Body) {
				out[i] = hqdb.Duplicate
				continue
			}
			t := m.Txn
			if _, err := tx.Exec(ctx, pgInsertConflict, m.StoreID, t.FlowNo, hqdb.BodyHash(m.Body), t.TerminalID,
				t.Kind, t.TotalCents, m.CreatedAt, string(m.Body), m.ReceivedAt); err != nil {
				return nil, fmt.Errorf("record conflict %s/%s: %w", m.StoreID, t.FlowNo, err)
			}
			out[i] = hqdb.Conflict
		}
	}
	delta := hqdb.NewBatchDelta()
	for i := range msgs {
		m := &msgs[i]
		var tag pgconn.CommandTag
		var err error
		switch m.Kind {
		case hqdb.KindTxn:
		case hqdb.KindManifest:
			mf := m.Manifest
			tag, err = tx.Exec(ctx, pgUpsertManifest, m.StoreID, mf.TerminalID, mf.Date, mf.Sales, mf.SalesCents,
				mf.Refunds, mf.RefundCents, mf.FirstFlowNo, mf.LastFlowNo, m.SentAt, m.ReceivedAt, string(m.Body))
		case hqdb.KindHeartbeat:
			hb := m.Heartbeat
			tag, err = tx.Exec(ctx, pgUpsertHeartbeat, m.StoreID, m.SentAt, m.ReceivedAt, hb.Backlog,
				hb.OldestUnsent, hb.Version, string(m.Body))
		case hqdb.KindStockAdjustment:
			a := m.Adjustment
			tag, err = tx.Exec(ctx, pgInsertAdjustment, m.StoreID, a.AdjustmentID, a.Barcode, a.Delta, a.Reason,
				m.CreatedAt, string(m.Body), m.ReceivedAt)
		default:
			err = fmt.Errorf("message %d: unknown kind %v", i, m.Kind)
		}
		if err != nil {
			return nil, err
		}
		if m.Kind != hqdb.KindTxn {
			out[i] = hqdb.Duplicate
			if tag.RowsAffected() > 0 {
				out[i] = hqdb.Inserted
			}
		}
		delta.Add(m, out[i])
	}
	// The stores and day_totals rows in one round trip.
	var b pgx.Batch
	sd := delta.SortedStores()
	ids, counts, maxFlows := make([]string, len(sd)), make([]int64, len(sd)), make([]string, len(sd))
	created, received, seen := make([]*time.Time, len(sd)), make([]*time.Time, len(sd)), make([]time.Time, len(sd))
	for j, d := range sd {
		ids[j], counts[j], maxFlows[j], seen[j] = d.ID, d.Inserted, d.MaxFlowNo, d.LastSeen
		if d.HasTxn {
			created[j], received[j] = &d.LastCreated, &d.LastReceived
		}
	}
	b.Queue(pgUpsertStores, ids, counts, maxFlows, created, received, seen)
	if dd := delta.SortedDays(); len(dd) > 0 {
		st, term, date := make([]string, len(dd)), make([]string, len(dd)), make([]string, len(dd))
		sales, salesCents, refunds, refundCents := make([]int64, len(dd)), make([]int64, len(dd)), make([]int64, len(dd)), make([]int64, len(dd))
		for j, d := range dd {
			st[j], term[j], date[j] = d.Store, d.Terminal, d.Date
			sales[j], salesCents[j], refunds[j], refundCents[j] = d.Sales, d.SalesCents, d.Refunds, d.RefundCents
		}
		b.Queue(pgUpsertDays, st, term, date, sales, salesCents, refunds, refundCents)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, fmt.Errorf("update stores and day totals: %w", err)
	}
	return out, nil
}

// quarantine puts the transactions marked by Screen, and those that would
// carry a day's totals past int64, into the quarantine table, and sets
// their outcomes.
func (s *Store) quarantine(ctx context.Context, tx pgx.Tx, msgs []hqdb.Msg, out []hqdb.Outcome) error {
	keys := map[hqdb.DayKey]bool{}
	var st, term, date []string
	for i := range msgs {
		m := &msgs[i]
		if m.Kind != hqdb.KindTxn || m.Quarantine != "" {
			continue
		}
		k := hqdb.DayKey{Store: m.StoreID, Terminal: m.Txn.TerminalID, Date: m.Day}
		if !keys[k] {
			keys[k] = true
			st, term, date = append(st, k.Store), append(term, k.Terminal), append(date, k.Date)
		}
	}
	stored := map[hqdb.DayKey]hqdb.Totals{}
	if len(st) > 0 {
		rows, err := tx.Query(ctx, pgReadDays, st, term, date)
		if err != nil {
			return fmt.Errorf("read day totals: %w", err)
		}
		for rows.Next() {
			var k hqdb.DayKey
			var t hqdb.Totals
			if err := rows.Scan(&k.Store, &k.Terminal, &k.Date, &t.Sales, &t.SalesCents, &t.Refunds, &t.RefundCents); err != nil {
				rows.Close()
				return fmt.Errorf("read day totals: %w", err)
			}
			stored[k] = t
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read day totals: %w", err)
		}
	}
	guard := hqdb.NewDayGuard(func(k hqdb.DayKey) (hqdb.Totals, error) { return stored[k], nil })
	for i := range msgs {
		m := &msgs[i]
		if m.Kind != hqdb.KindTxn {
			continue
		}
		reason, detail := m.Quarantine, m.QuarantineDetail
		if reason == "" {
			fits, err := guard.Admit(m)
			if err != nil {
				return err
			}
			if fits {
				continue
			}
			reason, detail = hqdb.QuarantineDayOverflow, hqdb.DayOverflowDetail(m)
		}
		tag, err := tx.Exec(ctx, pgInsertQuarantine, m.StoreID, m.Txn.FlowNo, hqdb.BodyHash(m.Body), reason, detail,
			string(m.Body), m.ReceivedAt)
		if err != nil {
			return fmt.Errorf("quarantine %s/%s: %w", m.StoreID, m.Txn.FlowNo, err)
		}
		out[i] = hqdb.Duplicate
		if tag.RowsAffected() > 0 {
			out[i] = hqdb.Quarantined
		}
	}
	return nil
}

// Have returns those of flowNos stored for storeID, in the order asked.
func (s *Store) Have(ctx context.Context, storeID string, flowNos []string) ([]string, error) {
	rows, err := s.pool.Query(ctx, // A row HQ set aside in its quarantine is held too (as on SQLite).
		"SELECT flow_no FROM transactions WHERE store_id = $1 AND flow_no = ANY($2::text[])"+
			" UNION SELECT flow_no FROM quarantine WHERE store_id = $1 AND flow_no = ANY($2::text[])",
		storeID, flowNos)
	if err != nil {
		return nil, fmt.Errorf("have %s: %w", storeID, err)
	}
	defer rows.Close()
	held := make(map[string]bool, len(flowNos))
	if err := scan().FlowNos(rows, held); err != nil {
		return nil, fmt.Errorf("have %s: %w", storeID, err)
	}
	return hqdb.InOrder(flowNos, held), nil
}

// closingRows are pgx rows as hqdb.Reader closes them: Close reports
// the rows' error, as database/sql's does.
type closingRows struct{ pgx.Rows }

func (r closingRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

// scan reads the shared SELECTs with pgx's time.Time columns.
func scan() hqdb.Scanner {
	return hqdb.Scanner{Time: func() hqdb.TimeColumn { return new(pgTime) }}
}

// pgTime is a timestamptz column as pgx returns it; NULL reads as zero.
type pgTime struct{ t *time.Time }

func (t *pgTime) Dest() any { return &t.t }

func (t *pgTime) Time() time.Time {
	if t.t == nil {
		return time.Time{}
	}
	return t.t.UTC()
}

// CarefulBatches is how many batches could not be stored in one round
// trip (conflicts, quarantine, near-overflow) since the store opened.
func (s *Store) CarefulBatches() int64 { return s.careful.Load() }

// StoredKeyBatches counts the batches whose plain insert met a key
// stored already and that were sent again with ON CONFLICT.
func (s *Store) StoredKeyBatches() int64 { return s.storedKey.Load() }
