package hqdb

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/posedge/posedge/internal/cents"
	"github.com/posedge/posedge/sync/wire"
)

// Store is where posedge-hq keeps what the stores send. It has one
// implementation per database (SQLite, PostgreSQL); the same contract
// test suite runs against each.
type Store interface {
	// InsertBatch stores msgs in one database transaction and tells, per
	// message and in order, what became of it. On error nothing is stored.
	InsertBatch(ctx context.Context, msgs []Msg) ([]Outcome, error)
	// Have returns those of flowNos that are stored for storeID, in the
	// order asked.
	Have(ctx context.Context, storeID string, flowNos []string) ([]string, error)
	// Watermark is the high-water mark of one store (zero if unknown).
	Watermark(ctx context.Context, storeID string) (Watermark, error)
	// Watermarks lists the high-water marks of every known store.
	Watermarks(ctx context.Context) ([]Watermark, error)
	// Completeness lists the days whose manifests differ from the stored
	// rows and the stores not heard from for longer than SilentAfter.
	Completeness(ctx context.Context, now time.Time) (Report, error)
	// Transaction returns the stored body of one transaction, or
	// ErrNotFound.
	Transaction(ctx context.Context, storeID, flowNo string) ([]byte, error)
	// Conflicts lists the bodies that arrived for an already stored
	// (store_id, flow_no) with a different content, oldest first.
	Conflicts(ctx context.Context, storeID string) ([]StoredConflict, error)
	// StockAdjustments lists a store's stored stock adjustments, oldest
	// first. Stock adjustments (contract §6) are stored once per
	// (store_id, adjustment_id): a resend is a duplicate, never a second
	// row.
	StockAdjustments(ctx context.Context, storeID string) ([]StoredAdjustment, error)
	// Quarantined lists the transactions of storeID that were quarantined
	// rather than stored (Msg.Quarantine, or a day total that would
	// overflow), oldest first.
	Quarantined(ctx context.Context, storeID string) ([]StoredQuarantine, error)
	// Fleet lists every store heard from, sorted by store_id, with the
	// figures of contract §7 judged at now.
	Fleet(ctx context.Context, now time.Time) ([]StoreEntry, error)
	// Ping tells whether the database answers.
	Ping(ctx context.Context) error
	Close() error
}

// ErrNotFound: no such row.
var ErrNotFound = errors.New("not found")

// StoredConflict is one row of the conflicts table.
type StoredConflict struct {
	StoreID    string          `json:"store_id"`
	FlowNo     string          `json:"flow_no"`
	Body       json.RawMessage `json:"body"`
	ReceivedAt time.Time       `json:"received_at"`
}

// StoredAdjustment is one row of the stock_adjustments table.
type StoredAdjustment struct {
	StoreID      string          `json:"store_id"`
	AdjustmentID string          `json:"adjustment_id"`
	Barcode      string          `json:"barcode"`
	Delta        int64           `json:"delta"`
	Reason       string          `json:"reason"`
	CreatedAt    time.Time       `json:"created_at"`
	Body         json.RawMessage `json:"body"`
}

// StoredQuarantine is one row of the quarantine table.
type StoredQuarantine struct {
	StoreID    string          `json:"store_id"`
	FlowNo     string          `json:"flow_no"`
	Reason     string          `json:"reason"`
	Detail     string          `json:"detail"`
	Body       json.RawMessage `json:"body"`
	ReceivedAt time.Time       `json:"received_at"`
}

// MsgKind tells what a message carries.
type MsgKind int

// Kinds of messages.
const (
	KindTxn MsgKind = iota + 1
	KindManifest
	KindHeartbeat
	KindStockAdjustment
)

func (k MsgKind) String() string {
	switch k {
	case KindTxn:
		return "txn"
	case KindManifest:
		return "manifest"
	case KindHeartbeat:
		return "heartbeat"
	case KindStockAdjustment:
		return "stock_adjustment"
	}
	return fmt.Sprintf("MsgKind(%d)", int(k))
}

// Msg is one decoded message to store. Build it with DecodeMsg.
type Msg struct {
	Kind       MsgKind
	StoreID    string
	Body       []byte // the JSON as received
	ReceivedAt time.Time

	Txn       wire.Txn // KindTxn
	CreatedAt time.Time
	Day       string // YYYYMMDD business day (KindTxn)
	// Quarantine, when set, is why HQ keeps this transaction apart in the
	// quarantine table instead of storing and counting it (Screen sets it);
	// QuarantineDetail says what exactly.
	Quarantine       string
	QuarantineDetail string

	Manifest   wire.Manifest        // KindManifest
	Heartbeat  wire.Heartbeat       // KindHeartbeat
	Adjustment wire.StockAdjustment // KindStockAdjustment (CreatedAt set too)
	SentAt     time.Time            // KindManifest, KindHeartbeat
}

// Outcome is what became of one message.
type Outcome int

// Outcomes of InsertBatch.
const (
	// Inserted: a new row (or a newer manifest or heartbeat).
	Inserted Outcome = iota + 1
	// Duplicate: the same row was already stored; nothing changed.
	Duplicate
	// Conflict: a different body is stored under the same
	// (store_id, flow_no); the new body went to the conflicts table.
	Conflict
	// Quarantined: the transaction went to the quarantine table, neither
	// stored nor counted (Msg.Quarantine says why).
	Quarantined
)

func (o Outcome) String() string {
	switch o {
	case Inserted:
		return "inserted"
	case Duplicate:
		return "duplicate"
	case Conflict:
		return "conflict"
	case Quarantined:
		return "quarantined"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Watermark is how far HQ has got with one store.
type Watermark struct {
	StoreID        string    `json:"store_id"`
	MaxFlowNo      string    `json:"max_flow_no"` // numerically greatest stored flow number
	Count          int64     `json:"count"`       // stored transactions
	LastCreatedAt  time.Time `json:"last_created_at"`
	LastReceivedAt time.Time `json:"last_received_at"`
	LastSeenAt     time.Time `json:"last_seen_at"` // last message of any kind
}

// MarshalJSON writes times never seen as null.
func (w Watermark) MarshalJSON() ([]byte, error) {
	ts := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	return json.Marshal(struct {
		StoreID        string     `json:"store_id"`
		MaxFlowNo      string     `json:"max_flow_no"`
		Count          int64      `json:"count"`
		LastCreatedAt  *time.Time `json:"last_created_at"`
		LastReceivedAt *time.Time `json:"last_received_at"`
		LastSeenAt     *time.Time `json:"last_seen_at"`
	}{w.StoreID, w.MaxFlowNo, w.Count, ts(w.LastCreatedAt), ts(w.LastReceivedAt), ts(w.LastSeenAt)})
}

// Report is the completeness report.
type Report struct {
	GeneratedAt time.Time     `json:"generated_at"`
	Incomplete  []DayDiff     `json:"incomplete"`
	Silent      []SilentStore `json:"silent"`
}

// Totals are the counters a manifest carries for a terminal's day.
type Totals struct {
	Sales       int64 `json:"sales"`
	SalesCents  int64 `json:"sales_cents"`
	Refunds     int64 `json:"refunds"`
	RefundCents int64 `json:"refund_cents"`
}

// DayDiff is a terminal's day whose manifest and stored rows differ.
type DayDiff struct {
	StoreID    string `json:"store_id"`
	TerminalID string `json:"terminal_id"`
	Date       string `json:"date"`
	Manifest   Totals `json:"manifest"`
	Stored     Totals `json:"stored"`
	// PastRetention: older than the days a store's journal keeps by
	// default, all of which it audits and repairs by itself
	// (hq.StoreRetentionDays); Repair says what happens to it, in words.
	PastRetention bool   `json:"past_retention"`
	Repair        string `json:"repair"`
	// JournalRetentionDays is the store's journal.retention as its last
	// heartbeat said (wire.Heartbeat); 0 (absent) when it never said,
	// and past retention is then judged by the default.
	JournalRetentionDays int `json:"journal_retention_days,omitempty"`
}

// SilentStore is a store not heard from for longer than silent_after.
type SilentStore struct {
	StoreID       string    `json:"store_id"`
	LastSeenAt    time.Time `json:"last_seen_at"`
	SilentSeconds int64     `json:"silent_seconds"`
}

// StoreOptions are what both Store implementations take.
type StoreOptions struct {
	SilentAfter time.Duration // default DefaultSilentAfter
	Logger      *slog.Logger  // default: discard
}

func (o StoreOptions) WithDefaults() StoreOptions {
	if o.SilentAfter <= 0 {
		o.SilentAfter = DefaultSilentAfter
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// flowLess orders flow numbers (strings of digits) numerically.
func flowLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// SameBody tells whether two transaction bodies are the same JSON value
// (byte-identical in practice; key order and spacing do not matter).
func SameBody(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func BodyHash(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// StoreDelta is what one batch adds to a store's row of the stores table.
type StoreDelta struct {
	ID           string
	Inserted     int64
	MaxFlowNo    string
	LastCreated  time.Time
	LastReceived time.Time
	LastSeen     time.Time
	HasTxn       bool
}

// DayKey names one terminal's business day.
type DayKey struct{ Store, Terminal, Date string }

// DayDelta is what one batch adds to a terminal's day in day_totals.
type DayDelta struct {
	DayKey
	Totals
}

// BatchDelta sums up what one batch changes in the stores and
// day_totals tables.
type BatchDelta struct {
	stores map[string]*StoreDelta
	days   map[DayKey]*DayDelta
}

func NewBatchDelta() *BatchDelta {
	return &BatchDelta{stores: map[string]*StoreDelta{}, days: map[DayKey]*DayDelta{}}
}

// Add counts one message's outcome.
func (b *BatchDelta) Add(m *Msg, o Outcome) {
	d := b.stores[m.StoreID]
	if d == nil {
		d = &StoreDelta{ID: m.StoreID}
		b.stores[m.StoreID] = d
	}
	if m.ReceivedAt.After(d.LastSeen) {
		d.LastSeen = m.ReceivedAt
	}
	if m.Kind != KindTxn || o != Inserted {
		return
	}
	d.HasTxn = true
	d.Inserted++
	if d.MaxFlowNo == "" || flowLess(d.MaxFlowNo, m.Txn.FlowNo) {
		d.MaxFlowNo = m.Txn.FlowNo
	}
	if m.CreatedAt.After(d.LastCreated) {
		d.LastCreated = m.CreatedAt
	}
	if m.ReceivedAt.After(d.LastReceived) {
		d.LastReceived = m.ReceivedAt
	}
	k := DayKey{m.StoreID, m.Txn.TerminalID, m.Day}
	day := b.days[k]
	if day == nil {
		day = &DayDelta{DayKey: k}
		b.days[k] = day
	}
	// DayGuard has checked that the stored totals plus the batch's stay
	// within int64; the additions here are of non-negative amounts below
	// that sum.
	if m.Txn.Kind == "refund" {
		day.Refunds++
		day.RefundCents += m.Txn.TotalCents
	} else {
		day.Sales++
		day.SalesCents += m.Txn.TotalCents
	}
}

// DayGuard keeps the day_totals rows from overflowing int64: it holds a
// terminal's day as stored (read once per batch) plus the transactions of
// the batch so far, and tells whether one more transaction still fits.
// It counts every candidate, including those that turn out duplicates, so
// it errs on the side of quarantining, never of overflowing.
type DayGuard struct {
	days map[DayKey]*Totals
	read func(DayKey) (Totals, error) // the stored row, zero if none
}

func NewDayGuard(read func(DayKey) (Totals, error)) *DayGuard {
	return &DayGuard{days: map[DayKey]*Totals{}, read: read}
}

// DayOverflowDetail is the quarantine detail of a transaction the day
// totals cannot take.
func DayOverflowDetail(m *Msg) string {
	return fmt.Sprintf("total_cents %d would carry the day totals of terminal %s on %s past 2^63-1", m.Txn.TotalCents, m.Txn.TerminalID, m.Day)
}

// Admit adds m to its day and reports true, or reports false (and adds
// nothing) when a count or a sum of cents would pass int64.
func (g *DayGuard) Admit(m *Msg) (bool, error) {
	k := DayKey{m.StoreID, m.Txn.TerminalID, m.Day}
	t := g.days[k]
	if t == nil {
		stored, err := g.read(k)
		if err != nil {
			return false, fmt.Errorf("read day totals of %s/%s/%s: %w", k.Store, k.Terminal, k.Date, err)
		}
		t = &stored
		g.days[k] = t
	}
	n, amount := &t.Sales, &t.SalesCents
	if m.Txn.Kind == "refund" {
		n, amount = &t.Refunds, &t.RefundCents
	}
	nn, ok1 := cents.Add(*n, 1)
	na, ok2 := cents.Add(*amount, m.Txn.TotalCents)
	if !ok1 || !ok2 {
		return false, nil
	}
	*n, *amount = nn, na
	return true, nil
}

// SortedStores lists the store changes in key order, so that
// concurrent batches take row locks in the same order.
func (b *BatchDelta) SortedStores() []*StoreDelta {
	out := make([]*StoreDelta, 0, len(b.stores))
	for _, d := range b.stores {
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y *StoreDelta) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// SortedDays lists the day changes in key order (see SortedStores).
func (b *BatchDelta) SortedDays() []*DayDelta {
	out := make([]*DayDelta, 0, len(b.days))
	for _, d := range b.days {
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y *DayDelta) int {
		return cmp.Or(strings.Compare(x.Store, y.Store), strings.Compare(x.Terminal, y.Terminal), strings.Compare(x.Date, y.Date))
	})
	return out
}

// DiffDays keeps the manifests whose totals differ from the stored ones.
func DiffDays(all []DayDiff) []DayDiff {
	out := []DayDiff{}
	for _, d := range all {
		if d.Manifest != d.Stored {
			out = append(out, d)
		}
	}
	return out
}

// DefaultSilentAfter is how long a store may stay quiet before the
// completeness report and the fleet view call it silent (silent_after).
const DefaultSilentAfter = 5 * time.Minute

// Quarantine reasons, the label of posedge_hq_quarantined_total.
const (
	// QuarantineAmount: a price, a line (qty × price_cents) or the total
	// above max_sale_cents, a quantity that is not positive, or lines that
	// do not sum to the total.
	QuarantineAmount = "amount"
	// QuarantineDayOverflow: storing the transaction would carry its
	// terminal's day totals past what a 64-bit integer holds.
	QuarantineDayOverflow = "day_total_overflow"
)

// TxnKey names one transaction: its store and flow number.
type TxnKey struct{ Store, Flow string }

// SchemaVersion is the version of the tables this posedge-hq writes.
const SchemaVersion = 1

// InOrder keeps the flow numbers of asked that are held, once each, in
// the order asked.
func InOrder(asked []string, held map[string]bool) []string {
	out := []string{}
	for _, f := range asked {
		if held[f] {
			out = append(out, f)
			delete(held, f)
		}
	}
	return out
}

// Silent is the completeness report's entry for a store last seen at
// seen, judged at now.
func Silent(storeID string, seen, now time.Time) SilentStore {
	return SilentStore{StoreID: storeID, LastSeenAt: seen, SilentSeconds: int64(now.Sub(seen) / time.Second)}
}
