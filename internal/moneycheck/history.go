package moneycheck

import (
	"sync"
	"time"
)

// Line is one line of an intent; PriceCents is zero on refund intents (the
// daemon prices refunds from the original).
type Line struct {
	Barcode    string `json:"barcode"`
	Qty        int64  `json:"qty"`
	PriceCents int64  `json:"price_cents"`
}

// Op is one request a till made and the answer it got. Retries of the same
// idempotency key are separate Ops with the same Terminal and Key.
type Op struct {
	Terminal   string
	Kind       string // "sale" or "refund"
	Key        string // Idempotency-Key (or the payment token used as key)
	Lines      []Line
	TotalCents int64
	Tender     string // sales only
	Original   string // refunds only: original_flow_no
	// OccurredAt is the intent's occurred_at (batch uploads); zero when
	// the till left it to the daemon's clock.
	OccurredAt time.Time
	// Batch: the till uploaded it in a batch (POST /v1/sales/batch): a
	// sale that already happened, accepted whatever the stock.
	Batch bool
	// Status is the HTTP status; 0 means no answer (timeout, reset), which
	// like any 5xx makes the op indeterminate.
	Status int
	Body   []byte
	At     time.Time
}

// Indeterminate reports whether the op may or may not have taken effect.
func (o Op) Indeterminate() bool {
	return o.Status == 0 || o.Status >= 500 || o.Status == 409 && isInProgress(o.Body)
}

// Refused reports whether the answer says the op did not take effect and
// will not: a 4xx other than "in progress" and "rate limited" (429,
// passing). A key so answered cannot explain a row at HQ, and a key told
// 2xx must never be so answered on a retry (it replays).
func (o Op) Refused() bool {
	return o.Status >= 400 && o.Status < 500 && o.Status != 429 && !o.Indeterminate()
}

// History collects ops from concurrent tills.
type History struct {
	mu  sync.Mutex
	ops []Op
}

// Add records one op; safe for concurrent tills.
func (h *History) Add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// Ops returns a copy of the recorded ops in the order they were added.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// Counters is one row of the daily stats (contract §4).
type Counters struct {
	Sales       int64 `json:"sales"`
	SalesCents  int64 `json:"sales_cents"`
	Refunds     int64 `json:"refunds"`
	RefundCents int64 `json:"refund_cents"`
}

// World is what the checker is given besides the history: the initial stock
// and what was read at the end. A nil map is not checked.
type World struct {
	InitialStock map[string]int64
	FinalStock   map[string]int64    // from Redis at the end
	HQ           map[string][]byte   // flow_no → body, from HQ's DB
	Terminals    map[string]Counters // daemon's stats
	Tenders      map[string]Counters // daemon's stats
	// Hours are the daemon's hourly stats of the day ("15" → counters),
	// each transaction counted in the hour of its occurred_at in Location
	// (UTC when nil).
	Hours    map[string]Counters
	Location *time.Location
	// Totals is the daemon's daily totals row; nil is not checked.
	Totals *Counters
	// Degraded tells a degraded-mode flow number (stock not enforced);
	// nil is the contract's numbering (docs/durability.md): 16 digits,
	// "2" + node + sequence in degraded mode, "1" + sequence in normal.
	Degraded func(flowNo string) bool
}

// DegradedFlow is the default World.Degraded.
func DegradedFlow(flowNo string) bool { return len(flowNo) == 16 && flowNo[0] == '2' }
