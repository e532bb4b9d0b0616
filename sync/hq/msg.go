package hq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// validStoreID tells whether s is a store (or terminal) ID: 1-32 of
// [A-Za-z0-9_-]. A loop rather than a regexp: it runs for every message
// (issue 26: the regexps were 2 % of posedge-hq's CPU while ingesting).
func validStoreID(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validFlowNo tells whether s is a flow number: 1-32 digits.
func validFlowNo(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

var (
	// adjustmentIDPattern: the store's ids are 16 hex digits; any short
	// token that fits a Nats-Msg-Id is taken.
	adjustmentIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// Rejection reasons, the label of posedge_hq_rejected_total.
const (
	reasonSubject  = "subject"
	reasonSchema   = "schema"
	reasonInvalid  = "invalid"
	reasonStoreID  = "store_mismatch"
	reasonTooLarge = "too_large"
	reasonMsgID    = "msg_id_mismatch"
)

// RejectError is a message that can never be stored, whatever the retry.
type RejectError struct {
	Reason string // one of the reason labels
	Err    error
}

func (e *RejectError) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *RejectError) Unwrap() error { return e.Err }

func reject(reason string, format string, args ...any) error {
	return &RejectError{Reason: reason, Err: fmt.Errorf("%w: "+format, append([]any{wire.ErrInvalid}, args...)...)}
}

// maxBodyBytes bounds a stored body (JetStream's default max payload).
const maxBodyBytes = 1 << 20

// DecodeMsg turns a message of the stream into a Msg: subject
// "<prefix>.<store>" is a transaction, "<prefix>.<store>.manifest" a
// manifest, "<prefix>.<store>.heartbeat" a heartbeat and
// "<prefix>.<store>.stock" a stock adjustment. schema is the
// Posedge-Schema header ("" is taken as 1). A message that can never be
// stored returns a *RejectError.
func DecodeMsg(prefix, subject, schema string, body []byte, receivedAt time.Time) (hqdb.Msg, error) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return hqdb.Msg{}, reject(reasonSubject, "subject %q is not below %s.", subject, prefix)
	}
	if schema != "" && schema != wire.SchemaV1 {
		return hqdb.Msg{}, reject(reasonSchema, "%s %q not supported (this posedge-hq reads %s)", wire.HeaderSchema, schema, wire.SchemaV1)
	}
	if len(body) > maxBodyBytes {
		return hqdb.Msg{}, reject(reasonTooLarge, "body of %d bytes", len(body))
	}
	toks := strings.Split(rest, ".")
	storeID := toks[0]
	if !validStoreID(storeID) {
		return hqdb.Msg{}, reject(reasonSubject, "subject %q: store ID must be 1-32 of [A-Za-z0-9_-]", subject)
	}
	m := hqdb.Msg{StoreID: storeID, Body: body, ReceivedAt: receivedAt.UTC()}
	switch {
	case len(toks) == 1:
		m.Kind = hqdb.KindTxn
		t, err := wire.ParseTxn(body)
		if err != nil {
			return hqdb.Msg{}, &RejectError{Reason: reasonInvalid, Err: err}
		}
		if t.StoreID != storeID {
			return hqdb.Msg{}, reject(reasonStoreID, "store_id %q in a message on %s", t.StoreID, subject)
		}
		if !validFlowNo(t.FlowNo) {
			return hqdb.Msg{}, reject(reasonInvalid, "flow_no %q is not 1-32 digits", t.FlowNo)
		}
		created, err := time.Parse(time.RFC3339Nano, t.CreatedAt)
		if err != nil {
			return hqdb.Msg{}, reject(reasonInvalid, "created_at %q is not RFC 3339", t.CreatedAt)
		}
		// The business day is the date written in occurred_at (the
		// moment of the sale at the till; batch uploads count on it),
		// else in created_at: the edge writes both in the store's zone.
		day := created
		if t.OccurredAt != "" {
			occ, err := time.Parse(time.RFC3339Nano, t.OccurredAt)
			if err != nil {
				return hqdb.Msg{}, reject(reasonInvalid, "occurred_at %q is not RFC 3339", t.OccurredAt)
			}
			day = occ
		}
		m.Txn, m.CreatedAt, m.Day = t, created.UTC(), businessday.Written(day)
	case len(toks) == 2 && toks[1] == "manifest":
		m.Kind = hqdb.KindManifest
		// Into a variable of its own: &m.Manifest would move the whole
		// Msg to the heap for every message, transactions too.
		var mf wire.Manifest
		if err := strictJSON(body, &mf); err != nil {
			return hqdb.Msg{}, err
		}
		m.Manifest = mf
		if mf.StoreID != storeID {
			return hqdb.Msg{}, reject(reasonStoreID, "store_id %q in a message on %s", mf.StoreID, subject)
		}
		var bad []string
		if !validStoreID(mf.TerminalID) {
			bad = append(bad, "terminal_id")
		}
		if !businessday.Valid(mf.Date) {
			bad = append(bad, "date")
		}
		if mf.Sales < 0 || mf.SalesCents < 0 || mf.Refunds < 0 || mf.RefundCents < 0 {
			bad = append(bad, "counts")
		}
		if len(bad) > 0 {
			return hqdb.Msg{}, reject(reasonInvalid, "manifest: bad or missing %s", strings.Join(bad, ", "))
		}
		m.SentAt = sentAt(mf.SentAt, receivedAt)
	case len(toks) == 2 && toks[1] == "heartbeat":
		m.Kind = hqdb.KindHeartbeat
		var hb wire.Heartbeat
		if err := strictJSON(body, &hb); err != nil {
			return hqdb.Msg{}, err
		}
		m.Heartbeat = hb
		if m.Heartbeat.StoreID != storeID {
			return hqdb.Msg{}, reject(reasonStoreID, "store_id %q in a message on %s", m.Heartbeat.StoreID, subject)
		}
		if d := m.Heartbeat.JournalRetentionDays; d < 0 || d > wire.MaxJournalRetentionDays {
			return hqdb.Msg{}, reject(reasonInvalid, "heartbeat: journal_retention_days %d outside 0-%d", d, wire.MaxJournalRetentionDays)
		}
		m.SentAt = sentAt(m.Heartbeat.SentAt, receivedAt)
	case len(toks) == 2 && toks[1] == "stock":
		m.Kind = hqdb.KindStockAdjustment
		var a wire.StockAdjustment
		if err := strictJSON(body, &a); err != nil {
			return hqdb.Msg{}, err
		}
		m.Adjustment = a
		if a.StoreID != storeID {
			return hqdb.Msg{}, reject(reasonStoreID, "store_id %q in a message on %s", a.StoreID, subject)
		}
		created, err := time.Parse(time.RFC3339Nano, a.CreatedAt)
		var bad []string
		if !adjustmentIDPattern.MatchString(a.AdjustmentID) {
			bad = append(bad, "adjustment_id")
		}
		if !barcodePattern.MatchString(a.Barcode) {
			bad = append(bad, "barcode")
		}
		if a.Delta == 0 {
			bad = append(bad, "delta")
		}
		if !wire.ValidAdjustmentReason(a.Reason) {
			bad = append(bad, "reason")
		}
		if err != nil {
			bad = append(bad, "created_at")
		}
		if len(bad) > 0 {
			return hqdb.Msg{}, reject(reasonInvalid, "stock adjustment: bad or missing %s", strings.Join(bad, ", "))
		}
		m.CreatedAt = created.UTC()
	default:
		return hqdb.Msg{}, reject(reasonSubject, "unknown subject %q", subject)
	}
	return m, nil
}

func strictJSON(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(v); err != nil {
		return &RejectError{Reason: reasonInvalid, Err: fmt.Errorf("%w: %v", wire.ErrInvalid, err)}
	}
	if d.More() {
		return reject(reasonInvalid, "data after the JSON object")
	}
	return nil
}

// sentAt is the sender's time of a manifest or heartbeat; without one,
// the time HQ received it.
func sentAt(s string, receivedAt time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	return receivedAt.UTC()
}

// Screen checks the money of a decoded transaction against maxCents and
// marks one HQ must not count (m.Quarantine): InsertBatch then keeps it in
// the quarantine table, and the receiver acknowledges it, so it never
// blocks the messages behind it.
func Screen(m *hqdb.Msg, maxCents int64) {
	if m.Kind != hqdb.KindTxn {
		return
	}
	if err := wire.CheckAmounts(m.Txn.Lines, m.Txn.TotalCents, maxCents); err != nil {
		m.Quarantine, m.QuarantineDetail = hqdb.QuarantineAmount, err.Error()
	}
}

// isReject tells whether err marks a message that can never be stored.
func isReject(err error) bool {
	var re *RejectError
	return errors.As(err, &re)
}

// CheckMsgID refuses a transaction whose Nats-Msg-Id is not
// "<store_id>.<flow_no>" of its subject's store and its body. JetStream
// drops any later message with an ID it has seen, stream-wide, so a
// message under another store's ID (or another flow's) would shadow that
// sale; refused here it is never stored, and the store, which counts a
// row delivered only once HQ confirms it (docs/security.md), sends the
// real one again. A missing ID is refused too: the edge always sets it.
func CheckMsgID(m hqdb.Msg, msgID string) error {
	if m.Kind != hqdb.KindTxn {
		return nil
	}
	if want := wire.MsgID(m.StoreID, m.Txn.FlowNo); msgID != want {
		return reject(reasonMsgID, "%s %q on a transaction of %s (want %q)", wire.HeaderMsgID, msgID, m.StoreID, want)
	}
	return nil
}
