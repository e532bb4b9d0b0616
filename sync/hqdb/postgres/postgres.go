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

var postgresSchema = []string{
	`CREATE TABLE IF NOT EXISTS hq_schema (version INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS transactions (
		store_id      TEXT NOT NULL,
		flow_no       TEXT NOT NULL,
		terminal_id   TEXT NOT NULL,
		kind          TEXT NOT NULL,
		total_cents   BIGINT NOT NULL,
		created_at    TIMESTAMPTZ NOT NULL,
		body          JSON NOT NULL,
		received_at   TIMESTAMPTZ NOT NULL,
		business_date TEXT NOT NULL,
		PRIMARY KEY (store_id, flow_no)
	)`,
	`CREATE TABLE IF NOT EXISTS day_totals (
		store_id      TEXT NOT NULL,
		terminal_id   TEXT NOT NULL,
		business_date TEXT NOT NULL,
		sales         BIGINT NOT NULL,
		sales_cents   BIGINT NOT NULL,
		refunds       BIGINT NOT NULL,
		refund_cents  BIGINT NOT NULL,
		PRIMARY KEY (store_id, terminal_id, business_date)
	)`,
	`CREATE TABLE IF NOT EXISTS conflicts (
		store_id    TEXT NOT NULL,
		flow_no     TEXT NOT NULL,
		body_sha256 TEXT NOT NULL,
		terminal_id TEXT NOT NULL,
		kind        TEXT NOT NULL,
		total_cents BIGINT NOT NULL,
		created_at  TIMESTAMPTZ NOT NULL,
		body        JSON NOT NULL,
		received_at TIMESTAMPTZ NOT NULL,
		PRIMARY KEY (store_id, flow_no, body_sha256)
	)`,
	`CREATE TABLE IF NOT EXISTS stock_adjustments (
		store_id      TEXT NOT NULL,
		adjustment_id TEXT NOT NULL,
		barcode       TEXT NOT NULL,
		delta         BIGINT NOT NULL,
		reason        TEXT NOT NULL,
		created_at    TIMESTAMPTZ NOT NULL,
		body          JSON NOT NULL,
		received_at   TIMESTAMPTZ NOT NULL,
		PRIMARY KEY (store_id, adjustment_id)
	)`,
	`CREATE TABLE IF NOT EXISTS quarantine (
		store_id    TEXT NOT NULL,
		flow_no     TEXT NOT NULL,
		body_sha256 TEXT NOT NULL,
		reason      TEXT NOT NULL,
		detail      TEXT NOT NULL,
		body        TEXT NOT NULL,
		received_at TIMESTAMPTZ NOT NULL,
		PRIMARY KEY (store_id, flow_no, body_sha256)
	)`,
	`CREATE TABLE IF NOT EXISTS manifests (
		store_id      TEXT NOT NULL,
		terminal_id   TEXT NOT NULL,
		date          TEXT NOT NULL,
		sales         BIGINT NOT NULL,
		sales_cents   BIGINT NOT NULL,
		refunds       BIGINT NOT NULL,
		refund_cents  BIGINT NOT NULL,
		first_flow_no TEXT NOT NULL,
		last_flow_no  TEXT NOT NULL,
		sent_at       TIMESTAMPTZ NOT NULL,
		received_at   TIMESTAMPTZ NOT NULL,
		body          JSON NOT NULL,
		PRIMARY KEY (store_id, terminal_id, date)
	)`,
	`CREATE TABLE IF NOT EXISTS heartbeats (
		store_id      TEXT NOT NULL PRIMARY KEY,
		sent_at       TIMESTAMPTZ NOT NULL,
		received_at   TIMESTAMPTZ NOT NULL,
		backlog       BIGINT NOT NULL,
		oldest_unsent TEXT NOT NULL,
		version       TEXT NOT NULL,
		body          JSON NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS stores (
		store_id         TEXT NOT NULL PRIMARY KEY,
		txn_count        BIGINT NOT NULL,
		max_flow_no      TEXT NOT NULL,
		last_created_at  TIMESTAMPTZ,
		last_received_at TIMESTAMPTZ,
		last_seen_at     TIMESTAMPTZ NOT NULL
	)`,
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
}

// schemaLock is the advisory lock key that serialises schema creation
// among posedge-hq processes starting together.
const schemaLock = 0x706f736564676501

// Store keeps HQ's tables in PostgreSQL; any number of
// posedge-hq processes may share one database.
type Store struct {
	pool *pgxpool.Pool
	opts hqdb.StoreOptions
	// careful counts the batches that could not be stored in one round
	// trip (conflicts, quarantine, near-overflow).
	careful atomic.Int64
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
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if _, err := tx.Exec(ctx, "INSERT INTO hq_schema (version) VALUES ($1)", hqdb.SchemaVersion); err != nil {
				return fmt.Errorf("record schema version: %w", err)
			}
		case err != nil:
			return fmt.Errorf("read schema version: %w", err)
		case v > hqdb.SchemaVersion:
			return fmt.Errorf("database schema version %d is newer than this posedge-hq (version %d): upgrade posedge-hq", v, hqdb.SchemaVersion)
		}
		return nil
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
	pgInsertConflict = `INSERT INTO conflicts
		(store_id, flow_no, body_sha256, terminal_id, kind, total_cents, created_at, body, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json, $9) ON CONFLICT DO NOTHING`
	pgInsertQuarantine = `INSERT INTO quarantine
		(store_id, flow_no, body_sha256, reason, detail, body, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`
	// The day rows a batch adds to, locked (in key order, as the upsert
	// takes them) until the batch commits: another posedge-hq adding to
	// the same day waits and then reads the sum this batch leaves.
	pgReadDays = `SELECT store_id, terminal_id, business_date, sales, sales_cents, refunds, refund_cents
		FROM day_totals WHERE (store_id, terminal_id, business_date) IN
			(SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))
		ORDER BY store_id, terminal_id, business_date FOR UPDATE`
	pgUpsertManifest = `INSERT INTO manifests
		(store_id, terminal_id, date, sales, sales_cents, refunds, refund_cents, first_flow_no, last_flow_no, sent_at, received_at, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::json)
		ON CONFLICT (store_id, terminal_id, date) DO UPDATE SET
			sales = excluded.sales, sales_cents = excluded.sales_cents,
			refunds = excluded.refunds, refund_cents = excluded.refund_cents,
			first_flow_no = excluded.first_flow_no, last_flow_no = excluded.last_flow_no,
			sent_at = excluded.sent_at, received_at = excluded.received_at, body = excluded.body
		WHERE excluded.sent_at > manifests.sent_at`
	pgUpsertHeartbeat = `INSERT INTO heartbeats
		(store_id, sent_at, received_at, backlog, oldest_unsent, version, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7::json)
		ON CONFLICT (store_id) DO UPDATE SET
			sent_at = excluded.sent_at, received_at = excluded.received_at, backlog = excluded.backlog,
			oldest_unsent = excluded.oldest_unsent, version = excluded.version, body = excluded.body
		WHERE excluded.sent_at > heartbeats.sent_at`
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
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])
		ON CONFLICT (store_id, terminal_id, business_date) DO UPDATE SET
			sales = day_totals.sales + excluded.sales, sales_cents = day_totals.sales_cents + excluded.sales_cents,
			refunds = day_totals.refunds + excluded.refunds, refund_cents = day_totals.refund_cents + excluded.refund_cents`
)

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
			out, err = s.ingest(ctx, msgs)
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

// Quarantined lists the quarantined transactions of storeID.
func (s *Store) Quarantined(ctx context.Context, storeID string) ([]hqdb.StoredQuarantine, error) {
	rows, err := s.pool.Query(ctx, `SELECT store_id, flow_no, reason, detail, body, received_at FROM quarantine
		WHERE store_id = $1 ORDER BY received_at, flow_no`, storeID)
	if err != nil {
		return nil, fmt.Errorf("quarantine of %s: %w", storeID, err)
	}
	defer rows.Close()
	out, err := scan().Quarantine(rows)
	if err != nil {
		return nil, fmt.Errorf("quarantine of %s: %w", storeID, err)
	}
	return out, nil
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

// Transaction returns the stored body of one transaction.
func (s *Store) Transaction(ctx context.Context, storeID, flowNo string) ([]byte, error) {
	var body string
	err := s.pool.QueryRow(ctx, "SELECT body::text FROM transactions WHERE store_id = $1 AND flow_no = $2", storeID, flowNo).Scan(&body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("transaction %s/%s: %w", storeID, flowNo, hqdb.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("transaction %s/%s: %w", storeID, flowNo, err)
	}
	return []byte(body), nil
}

// Conflicts lists the conflicting bodies received for storeID.
func (s *Store) Conflicts(ctx context.Context, storeID string) ([]hqdb.StoredConflict, error) {
	rows, err := s.pool.Query(ctx, `SELECT store_id, flow_no, body::text, received_at FROM conflicts
		WHERE store_id = $1 ORDER BY received_at, flow_no`, storeID)
	if err != nil {
		return nil, fmt.Errorf("conflicts of %s: %w", storeID, err)
	}
	defer rows.Close()
	out, err := scan().Conflicts(rows)
	if err != nil {
		return nil, fmt.Errorf("conflicts of %s: %w", storeID, err)
	}
	return out, nil
}

// Watermark is the high-water mark of one store.
func (s *Store) Watermark(ctx context.Context, storeID string) (hqdb.Watermark, error) {
	ws, err := s.watermarks(ctx, hqdb.WatermarksSelect+" WHERE store_id = $1", storeID)
	if err != nil || len(ws) == 0 {
		return hqdb.Watermark{StoreID: storeID}, err
	}
	return ws[0], nil
}

// Watermarks lists every known store's high-water mark.
func (s *Store) Watermarks(ctx context.Context) ([]hqdb.Watermark, error) {
	return s.watermarks(ctx, hqdb.WatermarksSelect+" ORDER BY store_id")
}

func (s *Store) watermarks(ctx context.Context, q string, args ...any) ([]hqdb.Watermark, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read watermarks: %w", err)
	}
	defer rows.Close()
	ws, err := scan().Watermarks(rows)
	if err != nil {
		return nil, fmt.Errorf("read watermarks: %w", err)
	}
	return ws, nil
}

// Completeness compares manifests with the stored rows and lists the
// stores silent for longer than SilentAfter at now.
func (s *Store) Completeness(ctx context.Context, now time.Time) (hqdb.Report, error) {
	rep := hqdb.Report{GeneratedAt: now.UTC(), Incomplete: []hqdb.DayDiff{}, Silent: []hqdb.SilentStore{}}
	rows, err := s.pool.Query(ctx, hqdb.CompletenessSelect)
	if err != nil {
		return rep, fmt.Errorf("completeness: %w", err)
	}
	days, err := scan().Days(rows)
	rows.Close()
	if err != nil {
		return rep, fmt.Errorf("completeness: %w", err)
	}
	rep.Incomplete = hqdb.DiffDays(days)
	rows, err = s.pool.Query(ctx, "SELECT store_id, last_seen_at FROM stores WHERE last_seen_at < $1 ORDER BY store_id",
		now.Add(-s.opts.SilentAfter))
	if err != nil {
		return rep, fmt.Errorf("completeness: %w", err)
	}
	defer rows.Close()
	silents, err := scan().Silent(rows, now)
	if err != nil {
		return rep, fmt.Errorf("completeness: %w", err)
	}
	rep.Silent = append(rep.Silent, silents...)
	return rep, nil
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
