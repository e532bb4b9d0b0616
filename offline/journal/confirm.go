package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Delivery confirmation: a row's way to HQ is journaled (pending) →
// acked (JetStream's PubAck) → confirmed (posedge-hq said it stores it,
// confirmed_at). A JetStream acknowledgement is not the end: a stream
// can lose what it acknowledged, and a PubAck with duplicate: true may
// stand for another message that carried the same Nats-Msg-Id. The
// replay asks HQ about rows acked a while ago (DueUnconfirmed), marks
// those it holds confirmed (MarkConfirmed) and puts those it lacks back
// in the outbox (MarkLacking). Prune never deletes an unconfirmed row.

// Unconfirmed is a row JetStream acknowledged that HQ has not confirmed
// storing yet.
type Unconfirmed struct {
	RowID   int64
	FlowNo  string
	AckedAt time.Time
	// StreamSeq is the stream sequence JetStream's last ack of it named
	// (0: unknown, acked before the journal kept it).
	StreamSeq uint64
	// Resends counts the times HQ lacked it and it went back to the
	// outbox; Lacks those of them that followed a fresh ack (not a
	// duplicate one): JetStream took the message and HQ still lacks it.
	Resends int
	Lacks   int
	// DupAck: JetStream's last ack of it said duplicate: JetStream
	// dropped the publish as one it already had (in its duplicate
	// window), whatever became of the one it had.
	DupAck bool
}

// DueUnconfirmed lists, oldest ack first, up to limit rows acked at or
// before ackedBefore that HQ has not confirmed and whose next question
// (confirm_due, set by MarkLacking) is not after now.
func (j *Journal) DueUnconfirmed(ctx context.Context, ackedBefore, now time.Time, limit int) ([]Unconfirmed, error) {
	if !j.confirm {
		return nil, nil
	}
	rows, err := j.r.QueryContext(ctx, `SELECT rowid, flow_no, acked_at, stream_seq, resends, lacks, dup_ack FROM txns
		WHERE state = 'acked' AND confirmed_at IS NULL AND acked_at <= ?
			AND (confirm_due IS NULL OR confirm_due <= ?)
		ORDER BY acked_at LIMIT ?`, ts(ackedBefore), ts(now), limit)
	if err != nil {
		return nil, fmt.Errorf("read unconfirmed rows: %w", err)
	}
	defer rows.Close()
	var out []Unconfirmed
	for rows.Next() {
		var u Unconfirmed
		var at string
		var dup int
		if err := rows.Scan(&u.RowID, &u.FlowNo, &at, &u.StreamSeq, &u.Resends, &u.Lacks, &dup); err != nil {
			return nil, fmt.Errorf("read unconfirmed rows: %w", err)
		}
		u.AckedAt, u.DupAck = parseTS(at), dup == 1
		out = append(out, u)
	}
	return out, rows.Err()
}

// MarkConfirmed records that HQ stores these rows: they are delivered
// (state acked, confirmed_at set) and may be pruned. It returns how many
// were not confirmed before.
func (j *Journal) MarkConfirmed(ctx context.Context, flowNos ...string) (int, error) {
	n, err := j.updateFlowsCount(ctx, `UPDATE txns SET state = 'acked', last_error = '', acked_at = COALESCE(acked_at, ?1),
			first_acked_at = COALESCE(first_acked_at, acked_at, ?1), confirmed_at = ?1, confirm_due = NULL
			WHERE confirmed_at IS NULL AND state != 'quarantined' AND `+inFlows, flowNos, ts(j.opt.Now()))
	if err != nil {
		return 0, fmt.Errorf("mark %d rows confirmed by HQ: %w", len(flowNos), err)
	}
	return n, nil
}

// MarkLacking puts rows JetStream acked and HQ said it lacks back in the
// outbox (pending: the replay publishes them again, same Nats-Msg-Id,
// same body), counts the resend, and asks HQ about them again no sooner
// than due. lacks grows unless the last ack was a duplicate one. Rows no
// longer acked-and-unconfirmed (confirmed meanwhile) are left alone. It
// returns how many rows went back.
func (j *Journal) MarkLacking(ctx context.Context, due time.Time, flowNos ...string) (int, error) {
	n, err := j.updateFlowsCount(ctx, `UPDATE txns SET state = 'pending', resends = resends + 1, lacks = lacks + 1 - dup_ack,
			confirm_due = ?, last_error = 'HQ lacks it after JetStream acknowledged it: resent'
			WHERE state = 'acked' AND confirmed_at IS NULL AND `+inFlows, flowNos, ts(due))
	if err != nil {
		return 0, fmt.Errorf("put %d rows HQ lacks back in the outbox: %w", len(flowNos), err)
	}
	return n, nil
}

// MarkPending records that HQ lacks these rows but their messages are
// still in the stream, not yet read by its consumer (a backlog after an
// outage): they are neither resent nor confirmed, and asked about again
// no sooner than due. It returns how many rows it deferred.
func (j *Journal) MarkPending(ctx context.Context, due time.Time, flowNos ...string) (int, error) {
	n, err := j.updateFlowsCount(ctx, `UPDATE txns SET confirm_due = ?
			WHERE state = 'acked' AND confirmed_at IS NULL AND `+inFlows, flowNos, ts(due))
	if err != nil {
		return 0, fmt.Errorf("defer %d rows HQ has not read yet: %w", len(flowNos), err)
	}
	return n, nil
}

// MarkAckedDuplicateRows is MarkAckedRows for rows whose PubAck said
// duplicate: acked, but noted, for HQ may hold another message under
// their Nats-Msg-Id (or none, when the stream lost it).
func (j *Journal) MarkAckedDuplicateRows(ctx context.Context, rowIDs ...int64) error {
	return j.MarkAckedSeqs(ctx, true, acksOf(rowIDs))
}

// Delivery is where a row is on its way to HQ.
type Delivery struct {
	State       string
	AckedAt     *time.Time
	ConfirmedAt *time.Time
	Resends     int
	DupAck      bool
}

// DeliveryOf is the delivery state of one row; ok is false when the
// journal does not hold it.
func (j *Journal) DeliveryOf(ctx context.Context, flowNo string) (d Delivery, ok bool, err error) {
	if !j.confirm {
		return d, false, errors.New("read delivery: journal not upgraded yet (start the daemon once)")
	}
	var acked, confirmed sql.NullString
	var dup int
	err = j.r.QueryRowContext(ctx, `SELECT state, acked_at, confirmed_at, resends, dup_ack FROM txns WHERE flow_no = ?`, flowNo).
		Scan(&d.State, &acked, &confirmed, &d.Resends, &dup)
	if errors.Is(err, sql.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, fmt.Errorf("read delivery of %s: %w", flowNo, err)
	}
	d.AckedAt, d.ConfirmedAt = parseNullTS(acked), parseNullTS(confirmed)
	d.DupAck = dup == 1
	return d, true, nil
}

// ConfirmedSince lists, in journal order after afterRowID, up to limit
// flow numbers of rows of business days from day on (YYYYMMDD) that HQ
// confirmed storing: what the store asks HQ about again, in case HQ
// lost them since (its database restored from an older backup).
func (j *Journal) ConfirmedSince(ctx context.Context, day string, afterRowID int64, limit int) ([]string, int64, error) {
	if !j.confirm {
		return nil, afterRowID, nil
	}
	rows, err := j.r.QueryContext(ctx, `SELECT rowid, flow_no FROM txns
		WHERE business_day >= ? AND rowid > ? AND state = 'acked' AND confirmed_at IS NOT NULL
		ORDER BY rowid LIMIT ?`, day, afterRowID, limit)
	if err != nil {
		return nil, afterRowID, fmt.Errorf("read confirmed rows: %w", err)
	}
	defer rows.Close()
	var out []string
	last := afterRowID
	for rows.Next() {
		var f string
		if err := rows.Scan(&last, &f); err != nil {
			return nil, afterRowID, fmt.Errorf("read confirmed rows: %w", err)
		}
		out = append(out, f)
	}
	return out, last, rows.Err()
}

// MarkLost puts rows HQ had confirmed and no longer holds back in the
// outbox: unconfirmed, pending, one more resend. It returns how many.
func (j *Journal) MarkLost(ctx context.Context, flowNos ...string) (int, error) {
	// A new way to HQ: its age counts from its next ack.
	n, err := j.updateFlowsCount(ctx, `UPDATE txns SET state = 'pending', confirmed_at = NULL, confirm_due = NULL, resends = resends + 1,
			first_acked_at = NULL,
			last_error = 'HQ no longer holds it after confirming it: resent'
			WHERE state = 'acked' AND confirmed_at IS NOT NULL AND `+inFlows, flowNos)
	if err != nil {
		return 0, fmt.Errorf("put %d rows HQ lost back in the outbox: %w", len(flowNos), err)
	}
	return n, nil
}
