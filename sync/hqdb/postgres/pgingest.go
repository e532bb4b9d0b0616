package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/posedge/posedge/internal/cents"
	"github.com/posedge/posedge/sync/hqdb"
)

// The one-round-trip ingest of a batch: after the batch's store locks
// (storelocks.go), one statement inserts the transactions, adds them to
// day_totals and stores, and tells per transaction whether it was
// inserted; the batch's manifests, heartbeats and stock adjustments ride
// in the same pgx batch, which PostgreSQL runs as one implicit
// transaction. Whatever needs a decision the statement cannot take — a
// body stored under the key that is not byte-identical (a conflict, or a
// duplicate spelt differently), a day total that would pass int64 —
// makes it fail and roll back whole, and the batch takes the careful
// path (insertBatch in an explicit transaction).

// pgNeedsCare is the SQLSTATE posedge_batch_needs_care raises.
const pgNeedsCare = "PE001"

// pgNeedsCareFunc is created with the schema.
const pgNeedsCareFunc = `CREATE OR REPLACE FUNCTION posedge_batch_needs_care() RETURNS boolean
	LANGUAGE plpgsql AS $$
	BEGIN
		RAISE EXCEPTION USING ERRCODE = '` + pgNeedsCare + `',
			MESSAGE = 'posedge-hq: this batch holds a conflict or a near-overflow and is stored the careful way';
	END $$`

const pgIngestHead = `WITH u AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::timestamptz[],
			$7::text[], $8::timestamptz[], $9::text[]) WITH ORDINALITY AS u(s, f, t, k, c, ca, b, ra, d, n)
	), locked AS (
		-- The stored totals of the batch's days, locked in key order
		-- until commit, plus what the batch could add: a sum past int64
		-- fails the statement (22003) before anything is inserted.
		SELECT day_totals.sales + g.sales AS a, day_totals.sales_cents + g.sales_cents AS b,
			day_totals.refunds + g.refunds AS c, day_totals.refund_cents + g.refund_cents AS d
		FROM day_totals JOIN unnest($10::text[], $11::text[], $12::text[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[])
			AS g(s, t, d, sales, sales_cents, refunds, refund_cents)
			ON day_totals.store_id = g.s AND day_totals.terminal_id = g.t AND day_totals.business_date = g.d
		ORDER BY day_totals.store_id, day_totals.terminal_id, day_totals.business_date
		FOR UPDATE OF day_totals
	), guard AS (
		SELECT bool_and(a IS NOT NULL AND b IS NOT NULL AND c IS NOT NULL AND d IS NOT NULL) IS NOT FALSE AS ok FROM locked
	), ins AS (
		INSERT INTO transactions
			(store_id, flow_no, terminal_id, kind, total_cents, created_at, body, received_at, business_date)
		SELECT s, f, t, k, c, ca, b::json, ra, d FROM u WHERE (SELECT ok FROM guard) ORDER BY s, f`

// pgIngestOnConflict lets a key already stored pass (the final SELECT
// then decides duplicate or careful); pgIngestNew goes without it.
const pgIngestOnConflict = `
		ON CONFLICT (store_id, flow_no) DO NOTHING`

const pgIngestTail = `
		RETURNING store_id, flow_no, terminal_id, kind, total_cents, created_at, received_at, business_date
	), days AS (
		INSERT INTO day_totals (store_id, terminal_id, business_date, sales, sales_cents, refunds, refund_cents)
		SELECT store_id, terminal_id, business_date,
			count(*) FILTER (WHERE kind <> 'refund'), COALESCE(sum(total_cents) FILTER (WHERE kind <> 'refund'), 0),
			count(*) FILTER (WHERE kind = 'refund'), COALESCE(sum(total_cents) FILTER (WHERE kind = 'refund'), 0)
		FROM ins GROUP BY store_id, terminal_id, business_date ORDER BY store_id, terminal_id, business_date
		ON CONFLICT (store_id, terminal_id, business_date) DO UPDATE SET
			sales = day_totals.sales + excluded.sales, sales_cents = day_totals.sales_cents + excluded.sales_cents,
			refunds = day_totals.refunds + excluded.refunds, refund_cents = day_totals.refund_cents + excluded.refund_cents
	), sto AS (
		INSERT INTO stores (store_id, txn_count, max_flow_no, last_created_at, last_received_at, last_seen_at)
		SELECT a.id, COALESCE(i.n, 0), COALESCE(i.maxf, ''), i.lc, i.lr, a.seen
		FROM unnest($17::text[], $18::timestamptz[]) AS a(id, seen) LEFT JOIN (
			SELECT store_id, count(*) AS n, max(created_at) AS lc, max(received_at) AS lr,
				-- The numerically greatest flow number (1-32 digits): the
				-- greatest of its length in two digits then itself, a plain
				-- max rather than an array sorted per batch (issue 26).
				substr(max((lpad(length(flow_no)::text, 2, '0') || flow_no) COLLATE "C"), 3) AS maxf
			FROM ins GROUP BY store_id) i ON i.store_id = a.id
		ORDER BY a.id
` + pgStoresMerge + `
	)
	-- A row not inserted must be stored byte for byte as sent (a plain
	-- redelivery); anything else, including a row committed by another
	-- posedge-hq after this statement began (not visible here), is
	-- decided by the careful path.
	SELECT u.n, ins.flow_no IS NOT NULL,
		CASE WHEN ins.flow_no IS NULL THEN
			CASE WHEN (SELECT tr.body::text FROM transactions tr WHERE tr.store_id = u.s AND tr.flow_no = u.f) IS DISTINCT FROM u.b
				THEN posedge_batch_needs_care() END
		END
	FROM u LEFT JOIN ins ON ins.store_id = u.s AND ins.flow_no = u.f
	ORDER BY u.n`

// pgIngest tells duplicates from new rows; pgIngestNew is the same
// statement for a batch of keys not stored yet, which is nearly every
// batch: a plain insert skips ON CONFLICT's speculative insertion
// (auto_explain, 256-row batches: the insert 2.0 -> 1.5-1.75 ms, the
// statement 3.0 -> 2.4-2.7 ms; issue 26). A key stored already fails it
// with a unique violation, nothing is stored, and the batch is sent again
// with pgIngest.
const (
	pgIngest    = pgIngestHead + pgIngestOnConflict + pgIngestTail
	pgIngestNew = pgIngestHead + pgIngestTail
)

// pgUniqueViolation is the SQLSTATE of a key stored already.
const pgUniqueViolation = "23505"

// errStoredKey: pgIngestNew met a key already stored.
var errStoredKey = errors.New("a key of the batch is stored already")

// errCareful: the batch cannot take the one-round-trip path.
var errCareful = errors.New("batch needs the careful path")

// ingest stores msgs in one round trip, or returns errCareful (nothing
// stored) when the batch needs insertBatch. With fresh, it sends
// pgIngestNew and returns errStoredKey (nothing stored) when a key is
// stored already.
func (s *Store) ingest(ctx context.Context, msgs []hqdb.Msg, fresh bool) ([]hqdb.Outcome, error) {
	out := make([]hqdb.Outcome, len(msgs))
	// The first message of each key is sent; a repeat in the batch must
	// be byte-identical to it.
	first := map[hqdb.TxnKey]int{}
	var firsts []int
	days := map[hqdb.DayKey]*hqdb.Totals{}
	seen := map[string]time.Time{}
	for i := range msgs {
		m := &msgs[i]
		if t, ok := seen[m.StoreID]; !ok || m.ReceivedAt.After(t) {
			seen[m.StoreID] = m.ReceivedAt
		}
		if m.Kind != hqdb.KindTxn {
			continue
		}
		if m.Quarantine != "" || m.Txn.TotalCents < 0 {
			return nil, errCareful
		}
		k := hqdb.TxnKey{Store: m.StoreID, Flow: m.Txn.FlowNo}
		if j, ok := first[k]; ok {
			if string(msgs[j].Body) != string(m.Body) {
				return nil, errCareful
			}
		} else {
			first[k] = i
			firsts = append(firsts, i)
		}
		// Every candidate counts, duplicates too, as in DayGuard.
		dk := hqdb.DayKey{Store: m.StoreID, Terminal: m.Txn.TerminalID, Date: m.Day}
		t := days[dk]
		if t == nil {
			t = &hqdb.Totals{}
			days[dk] = t
		}
		n, amount := &t.Sales, &t.SalesCents
		if m.Txn.Kind == "refund" {
			n, amount = &t.Refunds, &t.RefundCents
		}
		var ok1, ok2 bool
		*n, ok1 = cents.Add(*n, 1)
		*amount, ok2 = cents.Add(*amount, m.Txn.TotalCents)
		if !ok1 || !ok2 {
			return nil, errCareful
		}
	}
	c := txnColumnsOf(msgs, firsts)
	dks := make([]hqdb.DayKey, 0, len(days))
	for k := range days {
		dks = append(dks, k)
	}
	slices.SortFunc(dks, func(x, y hqdb.DayKey) int {
		if c := strings.Compare(x.Store, y.Store); c != 0 {
			return c
		}
		if c := strings.Compare(x.Terminal, y.Terminal); c != 0 {
			return c
		}
		return strings.Compare(x.Date, y.Date)
	})
	gs, gt, gd := make([]string, len(dks)), make([]string, len(dks)), make([]string, len(dks))
	gSales, gSalesCents, gRefunds, gRefundCents := make([]int64, len(dks)), make([]int64, len(dks)), make([]int64, len(dks)), make([]int64, len(dks))
	for j, k := range dks {
		t := days[k]
		gs[j], gt[j], gd[j] = k.Store, k.Terminal, k.Date
		gSales[j], gSalesCents[j], gRefunds[j], gRefundCents[j] = t.Sales, t.SalesCents, t.Refunds, t.RefundCents
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	seenAt := make([]time.Time, len(ids))
	for j, id := range ids {
		seenAt[j] = seen[id]
	}

	var b pgx.Batch
	b.Queue(pgLockStores, int32(storeLockClass), storeLockKeys(msgs))
	stmt := pgIngest
	if fresh {
		stmt = pgIngestNew
	}
	b.Queue(stmt, c.stores, c.flows, c.terms, c.kinds, c.cents, c.created, c.bodies, c.received, c.days,
		gs, gt, gd, gSales, gSalesCents, gRefunds, gRefundCents, ids, seenAt)
	var others []int
	for i := range msgs {
		m := &msgs[i]
		switch m.Kind {
		case hqdb.KindTxn:
			continue
		case hqdb.KindManifest:
			mf := m.Manifest
			b.Queue(pgUpsertManifest, m.StoreID, mf.TerminalID, mf.Date, mf.Sales, mf.SalesCents,
				mf.Refunds, mf.RefundCents, mf.FirstFlowNo, mf.LastFlowNo, m.SentAt, m.ReceivedAt, string(m.Body))
		case hqdb.KindHeartbeat:
			hb := m.Heartbeat
			b.Queue(pgUpsertHeartbeat, m.StoreID, m.SentAt, m.ReceivedAt, hb.Backlog, hb.OldestUnsent, hb.Version, string(m.Body))
		case hqdb.KindStockAdjustment:
			a := m.Adjustment
			b.Queue(pgInsertAdjustment, m.StoreID, a.AdjustmentID, a.Barcode, a.Delta, a.Reason,
				m.CreatedAt, string(m.Body), m.ReceivedAt)
		default:
			return nil, fmt.Errorf("message %d: unknown kind %v", i, m.Kind)
		}
		others = append(others, i)
	}
	br := s.pool.SendBatch(ctx, &b)
	err := s.readIngest(br, msgs, firsts, first, others, out)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == pgNeedsCare || pe.Code == "22003") {
		return nil, errCareful
	}
	if fresh && errors.As(err, &pe) && pe.Code == pgUniqueViolation {
		return nil, errStoredKey
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readIngest reads the results of ingest's pgx batch into out.
func (s *Store) readIngest(br pgx.BatchResults, msgs []hqdb.Msg, firsts []int, first map[hqdb.TxnKey]int, others []int, out []hqdb.Outcome) error {
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("lock the batch's stores: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	for rows.Next() {
		var n int64
		var inserted bool
		var care *bool
		if err := rows.Scan(&n, &inserted, &care); err != nil {
			rows.Close()
			return err
		}
		if n < 1 || int(n) > len(firsts) {
			rows.Close()
			return fmt.Errorf("ingest: row %d of %d", n, len(firsts))
		}
		out[firsts[n-1]] = hqdb.Duplicate
		if inserted {
			out[firsts[n-1]] = hqdb.Inserted
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range msgs {
		if msgs[i].Kind == hqdb.KindTxn && out[i] == 0 {
			if _, ok := first[hqdb.TxnKey{Store: msgs[i].StoreID, Flow: msgs[i].Txn.FlowNo}]; !ok {
				return fmt.Errorf("ingest: %s/%s not answered", msgs[i].StoreID, msgs[i].Txn.FlowNo)
			}
			out[i] = hqdb.Duplicate // a byte-identical repeat of an earlier message of the batch
		}
	}
	for _, i := range others {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		out[i] = hqdb.Duplicate
		if tag.RowsAffected() > 0 {
			out[i] = hqdb.Inserted
		}
	}
	return nil
}
