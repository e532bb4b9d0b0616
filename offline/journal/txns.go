package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Append makes txn durable. It returns only after the commit that holds
// it (shared with concurrent appends) has been fsynced.
func (j *Journal) Append(ctx context.Context, t Txn) error {
	if t.State == "" {
		t.State = StatePending
	}
	if t.Mode == "" {
		t.Mode = ModeNormal
	}
	// Before the row can be committed, so the filter never says "no" to
	// a key the journal holds (keyfilter.go); a write that fails leaves a
	// "maybe", which costs a look-up, nothing else.
	if j.keys != nil {
		j.keys.add(t.TerminalID, t.IdemKey)
	}
	// Only inserts: it may run again if its batch is rolled back.
	if err := j.writeRerun(ctx, j.inserts(t)); err != nil {
		return fmt.Errorf("journal %s %s: %w", t.Kind, t.FlowNo, err)
	}
	return nil
}

// inserts is the write of t's row and lines.
func (j *Journal) inserts(t Txn) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		if _, err := tx.Stmt(j.st.insertTxn).Exec(t.FlowNo, t.Seq, t.TerminalID, t.IdemKey, t.Fingerprint, t.Kind, t.OriginalFlowNo, t.Tender,
			t.TotalCents, t.BusinessDay, t.BusinessHour, ts(t.CreatedAt), t.Body, t.Mode, boolInt(t.Applied),
			t.State, ts(j.opt.Now())); err != nil {
			return err
		}
		ins := tx.Stmt(j.st.insertLine)
		for i, l := range t.Lines {
			if _, err := ins.Exec(t.FlowNo, i, l.Barcode, l.Qty, l.PriceCents); err != nil {
				return err
			}
		}
		return nil
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

const txnCols = `flow_no, seq, terminal_id, idem_key, fingerprint, kind, original_flow_no, tender,
	total_cents, business_day, business_hour, created_at, body, mode, applied, state, attempts, last_error`

func scanTxn(row interface{ Scan(...any) error }) (Txn, error) {
	var t Txn
	var created string
	var applied int
	err := row.Scan(&t.FlowNo, &t.Seq, &t.TerminalID, &t.IdemKey, &t.Fingerprint, &t.Kind, &t.OriginalFlowNo,
		&t.Tender, &t.TotalCents, &t.BusinessDay, &t.BusinessHour, &created, &t.Body, &t.Mode, &applied,
		&t.State, &t.Attempts, &t.LastError)
	t.CreatedAt = parseTS(created)
	t.Applied = applied == 1
	return t, err
}

func (j *Journal) one(ctx context.Context, q *sql.Stmt, args ...any) (*Txn, error) {
	t, err := scanTxn(q.QueryRowContext(ctx, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	if t.Lines, err = j.lines(ctx, t.FlowNo); err != nil {
		return nil, err
	}
	return &t, nil
}

func (j *Journal) lines(ctx context.Context, flowNo string) ([]Line, error) {
	rows, err := j.st.lines.QueryContext(ctx, flowNo)
	if err != nil {
		return nil, fmt.Errorf("read lines of %s: %w", flowNo, err)
	}
	defer rows.Close()
	var ls []Line
	for rows.Next() {
		var l Line
		if err := rows.Scan(&l.Barcode, &l.Qty, &l.PriceCents); err != nil {
			return nil, fmt.Errorf("read lines of %s: %w", flowNo, err)
		}
		ls = append(ls, l)
	}
	return ls, rows.Err()
}

// ByKey is the transaction a terminal journaled under an idempotency key,
// or nil.
func (j *Journal) ByKey(ctx context.Context, terminalID, key string) (*Txn, error) {
	return j.one(ctx, j.st.byKey, terminalID, key)
}

// ByFlow is the transaction with a flow number, or nil.
func (j *Journal) ByFlow(ctx context.Context, flowNo string) (*Txn, error) {
	return j.one(ctx, j.st.byFlow, flowNo)
}

// refundedQuery sums a sale's refunds per barcode. It repeats the WHERE of
// the partial index txns_original: SQLite cannot prove that a bound
// "original_flow_no = ?" implies "!= ”", and without it every refund
// scanned every line of the journal (make bench, 2026-12-06: the
// simulator's refunds took p50 37, 232 then 349 ms as the journal grew
// by a few thousand sales a repetition). TestPerSaleQueriesUseIndexes
// checks the plan.
const refundedQuery = `SELECT l.barcode, SUM(l.qty) FROM txns t JOIN txn_lines l ON l.flow_no = t.flow_no
		WHERE t.original_flow_no != '' AND t.original_flow_no = ? AND t.kind = 'refund' GROUP BY l.barcode`

// RefundedQty sums, per barcode, what refunds already took back from a sale.
func (j *Journal) RefundedQty(ctx context.Context, originalFlowNo string) (map[string]int64, error) {
	rows, err := j.r.QueryContext(ctx, refundedQuery, originalFlowNo)
	if err != nil {
		return nil, fmt.Errorf("read refunds of %s: %w", originalFlowNo, err)
	}
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var b string
		var q int64
		if err := rows.Scan(&b, &q); err != nil {
			return nil, err
		}
		m[b] = q
	}
	return m, rows.Err()
}

// MaxSeq is the highest Redis sequence number the journal ever held,
// pruned rows included (pruned_max_seq): Redis's sequence must never be
// at or below it (a failover may have lost INCRs).
func (j *Journal) MaxSeq(ctx context.Context) (int64, error) {
	var n sql.NullInt64
	if err := j.r.QueryRowContext(ctx, `SELECT MAX(seq) FROM txns`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read max sequence: %w", err)
	}
	pruned, err := j.MetaInt(ctx, MetaPrunedMaxSeq)
	if err != nil {
		return 0, fmt.Errorf("read max sequence: %w", err)
	}
	return max(n.Int64, pruned), nil
}

// MaxFlowWithPrefix is the highest flow number starting with prefix the
// journal ever held, pruned rows included (their high-water mark in
// meta), or "".
func (j *Journal) MaxFlowWithPrefix(ctx context.Context, prefix string) (string, error) {
	var s sql.NullString
	err := j.r.QueryRowContext(ctx, `SELECT MAX(flow_no) FROM txns WHERE flow_no >= ? AND flow_no < ?`,
		prefix, prefix+":").Scan(&s) // ':' sorts right after '9'
	if err != nil {
		return "", fmt.Errorf("read max flow number: %w", err)
	}
	pruned, _, err := j.Meta(ctx, MetaPrunedMaxFlowPrefix+prefix)
	if err != nil {
		return "", fmt.Errorf("read max flow number: %w", err)
	}
	if pruned > s.String { // same prefix, same width: text order is numeric
		return pruned, nil
	}
	return s.String, nil
}

// Unapplied lists transactions whose effects Redis does not have yet
// (degraded-mode sales), oldest first.
func (j *Journal) Unapplied(ctx context.Context, limit int) ([]Txn, error) {
	return j.list(ctx, `applied = 0 ORDER BY rowid LIMIT ?`, limit)
}

func (j *Journal) list(ctx context.Context, where string, args ...any) ([]Txn, error) {
	rows, err := j.r.QueryContext(ctx, `SELECT `+txnCols+` FROM txns WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	var out []Txn
	for rows.Next() {
		t, err := scanTxn(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("read journal: %w", err)
		}
		out = append(out, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if out[i].Lines, err = j.lines(ctx, out[i].FlowNo); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MarkApplied records that Redis now holds these transactions' effects.
func (j *Journal) MarkApplied(ctx context.Context, flowNos ...string) error {
	return j.updateFlows(ctx, `UPDATE txns SET applied = 1 WHERE `+inFlows, flowNos)
}

// inFlows selects the rows whose flow numbers are the JSON array bound to
// the statement's last parameter: one statement for a whole batch.
const inFlows = `flow_no IN (SELECT value FROM json_each(?))`

// updateFlows runs q, an UPDATE ending in inFlows, once for all flowNos
// (extra binds the parameters before the list).
func (j *Journal) updateFlows(ctx context.Context, q string, flowNos []string, extra ...any) error {
	_, err := j.updateFlowsCount(ctx, q, flowNos, extra...)
	return err
}

// updateFlowsCount is updateFlows returning how many rows it changed.
func (j *Journal) updateFlowsCount(ctx context.Context, q string, flowNos []string, extra ...any) (int, error) {
	if len(flowNos) == 0 {
		return 0, nil
	}
	list, err := json.Marshal(flowNos)
	if err != nil {
		return 0, fmt.Errorf("encode flow numbers: %w", err)
	}
	var n int64
	err = j.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.Exec(q, append(extra, string(list))...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

// Outgoing is a journal row waiting for HQ.
type Outgoing struct {
	RowID     int64 // its place in the journal: the outbox is in RowID order
	FlowNo    string
	Body      []byte
	CreatedAt time.Time
	Attempts  int // publishes that got no ack (MarkSent)
	// MaybeSent: it was handed to NATS before (Attempts > 0, or at or
	// below MarkSentThrough's mark) and HQ may hold it already.
	MaybeSent bool
}

// metaSentThrough is the meta key of MarkSentThrough's mark: "<rowid>
// <flow_no>" of the last row it covers.
const metaSentThrough = "outbox_sent_through"

// MarkSentThrough records that every outbox row up to rowID (the row of
// flowNo) has been handed to NATS at least once: one small write per
// batch, where a mark per row would rewrite every row of the batch. Rows
// at or below the mark stay pending until acked, and the outbox reports
// them MaybeSent. The mark never moves back, except past a mark whose row
// is gone (pruned, its rowid free for reuse), which no longer counts.
func (j *Journal) MarkSentThrough(ctx context.Context, rowID int64, flowNo string) error {
	return j.write(ctx, func(tx *sql.Tx) error {
		cur, err := sentThrough(tx.QueryRowContext(ctx, sentThroughQuery, metaSentThrough))
		if err != nil || cur >= rowID {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`,
			metaSentThrough, strconv.FormatInt(rowID, 10)+" "+flowNo)
		return err
	})
}

// sentThroughQuery reads MarkSentThrough's mark, with metaSentThrough
// as its argument.
const sentThroughQuery = `SELECT t.rowid FROM meta m JOIN txns t
		ON t.rowid = CAST(m.v AS INTEGER) AND t.flow_no = substr(m.v, instr(m.v, ' ') + 1)
		WHERE m.k = ?`

// sentThrough scans sentThroughQuery's row: 0 when the mark is unset, or
// when its row is gone.
func sentThrough(row *sql.Row) (int64, error) {
	var rowID int64
	err := row.Scan(&rowID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the outbox's sent mark: %w", err)
	}
	return rowID, nil
}

// outboxQuery reads the outbox in journal (rowid) order without sorting
// it: each arm repeats the WHERE of the partial index txns_outbox, so
// SQLite may use it, and fixes its one column, so the arm comes out of
// the index in rowid order from the given rowid on; the two arms are
// merged, and reading stops at the LIMIT. (A plain "state IN (...)
// ORDER BY rowid" sorts the whole backlog in a temporary B-tree for
// every batch.) TestOutboxNeverSorts checks the plan.
const outboxQuery = `SELECT rowid, flow_no, body, created_at, attempts FROM txns
		WHERE state IN ('pending','sent') AND state = 'pending' AND rowid > ?1
	UNION ALL
	SELECT rowid, flow_no, body, created_at, attempts FROM txns
		WHERE state IN ('pending','sent') AND state = 'sent' AND rowid > ?1
	ORDER BY 1 LIMIT ?2`

// Outbox returns, oldest first, up to limit rows not yet acknowledged by
// HQ and not quarantined, within maxBytes of bodies (at least one row).
func (j *Journal) Outbox(ctx context.Context, limit, maxBytes int) ([]Outgoing, error) {
	return j.OutboxAfter(ctx, 0, limit, maxBytes)
}

// OutboxAfter is Outbox from the rows journaled after afterRowID on: the
// replay reads its next batch while the previous one's acks are being
// recorded.
func (j *Journal) OutboxAfter(ctx context.Context, afterRowID int64, limit, maxBytes int) ([]Outgoing, error) {
	sent, err := sentThrough(j.st.sentThrough.QueryRowContext(ctx, metaSentThrough))
	if err != nil {
		return nil, err
	}
	rows, err := j.st.outbox.QueryContext(ctx, afterRowID, limit)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	defer rows.Close()
	var out []Outgoing
	size := 0
	for rows.Next() {
		var o Outgoing
		var c string
		if err := rows.Scan(&o.RowID, &o.FlowNo, &o.Body, &c, &o.Attempts); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
		o.CreatedAt = parseTS(c)
		o.MaybeSent = o.Attempts > 0 || o.RowID <= sent
		if len(out) > 0 && size+len(o.Body) > maxBytes {
			break
		}
		size += len(o.Body)
		out = append(out, o)
	}
	return out, rows.Err()
}

// MarkSent counts one more publish attempt of these rows that got no
// ack (a timeout, a lost connection): they are resent, after asking HQ.
func (j *Journal) MarkSent(ctx context.Context, flowNos ...string) error {
	return j.updateFlows(ctx, `UPDATE txns SET state = CASE WHEN state = 'pending' THEN 'sent' ELSE state END,
		attempts = attempts + 1 WHERE `+inFlows, flowNos)
}

// MarkAcked records JetStream's acknowledgement of these rows (not yet
// HQ's confirmation: MarkConfirmed).
func (j *Journal) MarkAcked(ctx context.Context, flowNos ...string) error {
	return j.updateFlows(ctx, `UPDATE txns SET state = 'acked', last_error = '', acked_at = ?1,
		first_acked_at = COALESCE(first_acked_at, ?1), dup_ack = 0 WHERE `+inFlows,
		flowNos, ts(j.opt.Now()))
}

// MarkAckedRows is MarkAcked for outbox rows named by their RowID, which
// spares a lookup per row: the replay's mark of every batch.
func (j *Journal) MarkAckedRows(ctx context.Context, rowIDs ...int64) error {
	return j.MarkAckedSeqs(ctx, false, acksOf(rowIDs))
}

// Ack is JetStream's PubAck of an outbox row: the row and the stream
// sequence the ack named (0: unknown).
type Ack struct {
	RowID     int64
	StreamSeq uint64
}

func acksOf(rowIDs []int64) []Ack {
	acks := make([]Ack, len(rowIDs))
	for i, id := range rowIDs {
		acks[i] = Ack{RowID: id}
	}
	return acks
}

// MarkAckedSeqs records JetStream's acks of outbox rows with the stream
// sequence each named: HQ is asked about the row with it (a row at a
// sequence its consumer has not read yet is on its way, not lacking).
// dup: the acks said duplicate (MarkAckedDuplicateRows). The first ack
// of a row's way to HQ is kept (first_acked_at) across resends.
func (j *Journal) MarkAckedSeqs(ctx context.Context, dup bool, acks []Ack) error {
	if len(acks) == 0 {
		return nil
	}
	// One prepared statement run per row, each a rowid lookup: an
	// UPDATE … FROM json_each join let SQLite scan the whole table once
	// per acked row (a 20,000-row backlog drained 14× slower,
	// TestSevenDayOutageDrainsOnceWithinTheSyncPolicy: 116 s for 8 s).
	now := ts(j.opt.Now())
	return j.write(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `UPDATE txns SET state = 'acked', last_error = '', acked_at = ?1,
			first_acked_at = COALESCE(first_acked_at, ?1), dup_ack = ?2, stream_seq = ?3
			WHERE rowid = ?4 AND state IN ('pending','sent')`)
		if err != nil {
			return fmt.Errorf("prepare the ack mark: %w", err)
		}
		defer st.Close()
		for _, a := range acks {
			if _, err := st.ExecContext(ctx, now, boolInt(dup), int64(a.StreamSeq), a.RowID); err != nil {
				return fmt.Errorf("mark row %d acked: %w", a.RowID, err)
			}
		}
		return nil
	})
}

// MarkFailed keeps the last publish error of a row for status and support.
func (j *Journal) MarkFailed(ctx context.Context, reason string, flowNos ...string) error {
	return j.updateFlows(ctx, `UPDATE txns SET last_error = ? WHERE `+inFlows, flowNos, reason)
}

// Quarantine sets aside a row HQ refused for good, with the reason; it no
// longer blocks the rows behind it.
func (j *Journal) Quarantine(ctx context.Context, flowNo, reason string) error {
	return j.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`UPDATE txns SET state = 'quarantined', last_error = ? WHERE flow_no = ?`, reason, flowNo); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT OR REPLACE INTO quarantine (flow_no, reason, at) VALUES (?,?,?)`, flowNo, reason, ts(j.opt.Now()))
		return err
	})
}

// Quarantined lists the rows set aside, with their reasons.
func (j *Journal) Quarantined(ctx context.Context) ([]QuarantinedRow, error) {
	rows, err := j.r.QueryContext(ctx, `SELECT flow_no, reason, at FROM quarantine ORDER BY at`)
	if err != nil {
		return nil, fmt.Errorf("read quarantine: %w", err)
	}
	defer rows.Close()
	var out []QuarantinedRow
	for rows.Next() {
		var q QuarantinedRow
		var at string
		if err := rows.Scan(&q.FlowNo, &q.Reason, &at); err != nil {
			return nil, err
		}
		q.At = parseTS(at)
		out = append(out, q)
	}
	return out, rows.Err()
}

// QuarantinedRow is one row HQ refused (the quarantine table); a
// transaction Redis cannot apply is an UnappliableRow.
type QuarantinedRow struct {
	FlowNo string    `json:"flow_no"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// RetryQuarantined puts quarantined rows (all when none are named) back in
// the outbox.
func (j *Journal) RetryQuarantined(ctx context.Context, flowNos ...string) (int, error) {
	n := 0
	err := j.write(ctx, func(tx *sql.Tx) error {
		fs, err := flowsIn(tx, "quarantine", flowNos)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if _, err := tx.Exec(`UPDATE txns SET state = 'pending' WHERE flow_no = ?`, f); err != nil {
				return err
			}
			if _, err := tx.Exec(`DELETE FROM quarantine WHERE flow_no = ?`, f); err != nil {
				return err
			}
		}
		n = len(fs)
		return nil
	})
	return n, err
}

// DayTotals are one terminal's (or tender's) counters for a day or hour.
type DayTotals struct {
	Sales       int64 `json:"sales"`
	SalesCents  int64 `json:"sales_cents"`
	Refunds     int64 `json:"refunds"`
	RefundCents int64 `json:"refund_cents"`
}

// Add counts one transaction.
func (d *DayTotals) Add(kind string, cents int64) {
	if kind == "refund" {
		d.Refunds++
		d.RefundCents += cents
		return
	}
	d.Sales++
	d.SalesCents += cents
}

// DayRow is one group of a day's totals from the journal.
type DayRow struct {
	TerminalID string
	Tender     string
	Hour       string
	Totals     DayTotals
}

// DayTotalsByGroup sums a business day from the journal, grouped by
// terminal, tender and hour: what Redis counters are rebuilt from.
func (j *Journal) DayTotalsByGroup(ctx context.Context, day string) ([]DayRow, error) {
	return j.dayTotals(ctx, day, "")
}

// dayTotals sums a business day's transactions matching the extra
// condition (with its arguments), grouped by terminal, tender and hour.
func (j *Journal) dayTotals(ctx context.Context, day, cond string, args ...any) ([]DayRow, error) {
	rows, err := j.r.QueryContext(ctx, `SELECT terminal_id, tender, business_hour, kind, COUNT(*), SUM(total_cents)
		FROM txns WHERE business_day = ? `+cond+` GROUP BY terminal_id, tender, business_hour, kind`,
		append([]any{day}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("sum day %s: %w", day, err)
	}
	defer rows.Close()
	var out []DayRow
	for rows.Next() {
		var r DayRow
		var kind string
		var n, c int64
		if err := rows.Scan(&r.TerminalID, &r.Tender, &r.Hour, &kind, &n, &c); err != nil {
			return nil, err
		}
		if kind == "refund" {
			r.Totals.Refunds, r.Totals.RefundCents = n, c
		} else {
			r.Totals.Sales, r.Totals.SalesCents = n, c
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// HasUnapplied reports whether any transaction still waits for Redis.
func (j *Journal) HasUnapplied(ctx context.Context) (bool, error) {
	var b bool
	if err := j.r.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM txns WHERE applied = 0)`).Scan(&b); err != nil {
		return false, fmt.Errorf("read journal: %w", err)
	}
	return b, nil
}

// CountUnapplied is how many transactions wait to be applied to Redis
// (degraded ones, not set aside).
func (j *Journal) CountUnapplied(ctx context.Context) (int, error) {
	var n int
	if err := j.r.QueryRowContext(ctx, `SELECT count(*) FROM txns WHERE applied = 0`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read journal: %w", err)
	}
	return n, nil
}

// AppliedSince lists, oldest first, transactions Redis was told of (normal
// and recovered modes, and degraded ones already applied) journaled at or
// after since: what a Redis that lost its last writes (failover, restart
// from an AOF missing its last second) may lack. afterRowID pages; the
// row id returned is the page's last.
func (j *Journal) AppliedSince(ctx context.Context, since time.Time, afterRowID int64, limit int) ([]Txn, int64, error) {
	keys, err := j.AppliedKeysSince(ctx, since, afterRowID, limit)
	if err != nil || len(keys) == 0 {
		return nil, afterRowID, err
	}
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = k.RowID
	}
	txns, err := j.TxnsAt(ctx, ids)
	return txns, ids[len(ids)-1], err
}

// RowKey is a journal row's idempotency identity: enough to ask Redis
// whether it holds the row (its record, pe:{S}:idem:<terminal>:<key>)
// without reading the row itself.
type RowKey struct {
	RowID              int64
	FlowNo, TerminalID string
	IdemKey            string
}

// AppliedKeysSince is AppliedSince's page as identities only: a repair
// asks Redis for a page of records at once and reads whole rows only for
// those Redis lacks (a re-apply over a busy store's last ten minutes read
// and ran a script for every row).
func (j *Journal) AppliedKeysSince(ctx context.Context, since time.Time, afterRowID int64, limit int) ([]RowKey, error) {
	rows, err := j.r.QueryContext(ctx, `SELECT rowid, flow_no, terminal_id, idem_key FROM txns
		WHERE applied = 1 AND journaled_at >= ? AND rowid > ? ORDER BY rowid LIMIT ?`, ts(since), afterRowID, limit)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer rows.Close()
	var out []RowKey
	for rows.Next() {
		var k RowKey
		if err := rows.Scan(&k.RowID, &k.FlowNo, &k.TerminalID, &k.IdemKey); err != nil {
			return nil, fmt.Errorf("read journal: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	return out, nil
}

// TxnsAt lists the transactions of these row ids, oldest first, with
// their lines; ids the journal no longer holds are left out.
func (j *Journal) TxnsAt(ctx context.Context, ids []int64) ([]Txn, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return j.list(ctx, `rowid IN (?`+strings.Repeat(",?", len(ids)-1)+`) ORDER BY rowid`, args...)
}

// flowsIn lists the flow numbers of a set-aside table (quarantine or
// unappliable): those named that it holds, or all of them when none are
// named. table is one of this package's constants, never input.
func flowsIn(tx *sql.Tx, table string, flowNos []string) ([]string, error) {
	q, args := `SELECT flow_no FROM `+table, []any{}
	if len(flowNos) > 0 {
		q += ` WHERE flow_no IN (?` + strings.Repeat(",?", len(flowNos)-1) + `)`
		for _, f := range flowNos {
			args = append(args, f)
		}
	}
	rows, err := tx.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var fs []string
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	return fs, rows.Err()
}
