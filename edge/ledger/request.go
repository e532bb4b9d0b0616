package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"time"

	"github.com/posedge/posedge/internal/cents"
)

// Limits of a request's content. Transport limits (body sizes) belong to
// the caller that reads the request.
const (
	MaxBatchSales = 100
	MaxLines      = 200
	// MaxQty bounds a line's qty. The money of a sale or refund is
	// bounded by max_sale_cents (Bounds.MaxSaleCents) and checked by
	// internal/cents; an item master price by cents.MaxItemPrice.
	MaxQty = 1_000_000
	// OccurredAtPast and OccurredAtFuture bound occurred_at around the
	// daemon's clock: a till's offline sale is at most 30 days old, and
	// a clock 5 minutes fast is a till's clock, not a sale from the future.
	OccurredAtPast   = 30 * 24 * time.Hour
	OccurredAtFuture = 5 * time.Minute
)

// Bounds are what a request is checked against besides its form: the
// store's max_sale_cents and the daemon's clock (occurred_at's window).
type Bounds struct {
	MaxSaleCents int64     // the store's max_sale_cents; 0 = cents.DefaultMaxSaleCents
	Now          time.Time // zero = time.Now()
}

func (b Bounds) max() int64 {
	if b.MaxSaleCents <= 0 {
		return cents.DefaultMaxSaleCents
	}
	return b.MaxSaleCents
}

func (b Bounds) now() time.Time {
	if b.Now.IsZero() {
		return time.Now()
	}
	return b.Now
}

var (
	barcodeRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	keyRE     = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)
	flowRE    = regexp.MustCompile(`^[0-9]{1,32}$`)
	tenders   = map[string]bool{"cash": true, "card": true, "mobile": true, "other": true}
)

// ValidBarcode reports whether s is a barcode the contract accepts.
func ValidBarcode(s string) bool { return barcodeRE.MatchString(s) }

// ValidKey reports whether s is a well-formed Idempotency-Key.
func ValidKey(s string) bool { return keyRE.MatchString(s) }

// ValidFlowNo reports whether s can be a flow number.
func ValidFlowNo(s string) bool { return flowRE.MatchString(s) }

// Line is one line of a sale.
type Line struct {
	Barcode    string `json:"barcode"`
	Qty        int64  `json:"qty"`
	PriceCents int64  `json:"price_cents"`
}

// SaleRequest is a sale as a terminal asks for it. Its JSON form is its
// idempotency fingerprint: changing a field changes every fingerprint.
type SaleRequest struct {
	Lines      []Line `json:"lines"`
	TotalCents int64  `json:"total_cents"`
	Tender     string `json:"tender"`
	ReceiptNo  string `json:"receipt_no,omitempty"`
	CashierID  string `json:"cashier_id,omitempty"`
	// OccurredAt is RFC3339; nil = now. A till that sends "" sent no
	// time at all: refused, so it is a pointer, not a string's zero.
	OccurredAt *string `json:"occurred_at,omitempty"`
}

// RefundRequest is a refund as a terminal asks for it.
type RefundRequest struct {
	OriginalFlowNo string       `json:"original_flow_no"`
	Lines          []RefundLine `json:"lines"`
	TotalCents     int64        `json:"total_cents"`
}

// RefundLine is one line of a refund: what goes back, at the original price.
type RefundLine struct {
	Barcode string `json:"barcode"`
	Qty     int64  `json:"qty"`
	// Priced is set when the till sent a price_cents for this line: a
	// refund line is priced from the original sale, so Validate refuses
	// it as unknown_field, in the order of the body's fields. Not part
	// of the fingerprint (a priced line is never recorded).
	Priced bool `json:"-"`
}

// BatchSale is one sale of a batch upload, with its own key.
type BatchSale struct {
	Key  string
	Sale SaleRequest
	Err  *Error // set when this sale alone is refused (e.g. it did not decode)
}

// Fingerprint identifies a request body for idempotency: the same key with
// another fingerprint is a reused key.
func Fingerprint(v any) string {
	b, _ := json.Marshal(v)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:16])
}

// Validate checks a sale against the contract's rules (§3): the first
// broken rule is the refusal, checked in the order of the body's fields.
// Every price, line (qty × price_cents) and the total are at most
// max_sale_cents, computed with overflow detection.
func (s SaleRequest) Validate(b Bounds) *Error {
	if e := validLineCount(len(s.Lines)); e != nil {
		return e
	}
	max := b.max()
	for i, l := range s.Lines {
		if e := validLine(i, l.Barcode, l.Qty); e != nil {
			return e
		}
		// Each line's amounts right after its barcode and qty: the
		// first broken rule in the order of the body's fields.
		if _, f := cents.CheckLine(i, cents.Line{Qty: l.Qty, Price: l.PriceCents}, max); f != nil {
			return amountError(f, s.TotalCents)
		}
	}
	// The whole amount rule (the lines pass again; the total, the
	// running sum and the total's match are what is left).
	if f := cents.Check(amounts(s.Lines), s.TotalCents, max); f != nil {
		return amountError(f, s.TotalCents)
	}
	if !tenders[s.Tender] {
		return Errorf(KindInvalid, "invalid_tender", "tender must be cash, card, mobile or other")
	}
	if len(s.ReceiptNo) > 64 {
		return Errorf(KindInvalid, "invalid_receipt_no", "receipt_no is at most 64 bytes")
	}
	if len(s.CashierID) > 32 {
		return Errorf(KindInvalid, "invalid_cashier_id", "cashier_id is at most 32 bytes")
	}
	if s.OccurredAt != nil {
		at, err := time.Parse(time.RFC3339, *s.OccurredAt)
		if err != nil {
			return errOccurredAt()
		}
		if e := occurredAtWindow(at, b.now()); e != nil {
			return e
		}
	}
	return nil
}

// Checked validates a sale and returns it as the ledger records and
// fingerprints it: occurred_at in UTC (RFC3339Nano), so the same instant
// sent with two offsets is one request.
func (s SaleRequest) Checked(b Bounds) (SaleRequest, *Error) {
	if e := s.Validate(b); e != nil {
		return SaleRequest{}, e
	}
	if s.OccurredAt != nil {
		t, _ := time.Parse(time.RFC3339, *s.OccurredAt) // Validate parsed it
		at := t.UTC().Format(time.RFC3339Nano)
		s.OccurredAt = &at
	}
	return s, nil
}

// amounts is the money of a sale's lines, as internal/cents checks it.
func amounts(ls []Line) []cents.Line {
	out := make([]cents.Line, len(ls))
	for i, l := range ls {
		out[i] = cents.Line{Qty: l.Qty, Price: l.PriceCents}
	}
	return out
}

// sumLines is the checked sum of a sale's lines: above max (or
// overflowing, which cannot happen below it) is invalid_amount.
func sumLines(ls []Line, max int64) (int64, *Error) {
	sum, f := cents.Sum(amounts(ls), max)
	if f != nil {
		return 0, amountError(f, 0)
	}
	return sum, nil
}

// amountError words an amount fault as the contract's refusal (§3).
func amountError(f *cents.Fault, total int64) *Error {
	switch f.Rule {
	case cents.TotalRange:
		return errTotal(f.Max)
	case cents.PriceRange:
		return Errorf(KindInvalid, "invalid_amount", "lines[%d].price_cents must be a whole number of cents from 0 to max_sale_cents (%d)", f.Line, f.Max)
	case cents.LineAbove:
		return Errorf(KindInvalid, "invalid_amount", "lines[%d]: qty × price_cents is above max_sale_cents (%d)", f.Line, f.Max)
	case cents.SumAbove:
		return Errorf(KindInvalid, "invalid_amount", "the lines up to lines[%d] sum above max_sale_cents (%d)", f.Line, f.Max)
	case cents.Mismatch:
		return Errorf(KindInvalid, "total_mismatch", "total_cents %d is not the sum of qty×price_cents, %d", total, f.Sum)
	}
	// QtyPositive: validLine refused a qty below 1 before any amount.
	return Errorf(KindInvalid, "invalid_qty", "lines[%d].qty must be a whole number from 1 to %d", f.Line, MaxQty)
}

func occurredAtWindow(at, now time.Time) *Error {
	if at.Before(now.Add(-OccurredAtPast)) || at.After(now.Add(OccurredAtFuture)) {
		return Errorf(KindInvalid, "invalid_occurred_at", "occurred_at must lie between 30 days before and 5 minutes after the store's clock (%s)",
			now.UTC().Format(time.RFC3339))
	}
	return nil
}

// errOccurredAt is the refusal of an occurred_at that is not RFC3339.
func errOccurredAt() *Error {
	return Errorf(KindInvalid, "invalid_occurred_at", "occurred_at must be RFC3339, e.g. 2026-11-30T10:00:00Z")
}

// Validate checks a refund's form; whether the sale it refers to allows
// it, and its value at the original prices, are checked by Refund.
func (r RefundRequest) Validate(b Bounds) *Error {
	if !ValidFlowNo(r.OriginalFlowNo) {
		return Errorf(KindInvalid, "invalid_flow_no", "original_flow_no must be the digits of a flow number")
	}
	if e := validLineCount(len(r.Lines)); e != nil {
		return e
	}
	for i, l := range r.Lines {
		if e := validLine(i, l.Barcode, l.Qty); e != nil {
			return e
		}
		if l.Priced {
			return Errorf(KindInvalid, "unknown_field", "lines[%d].price_cents: a refund line is priced from the original sale", i)
		}
	}
	if r.TotalCents < 0 || r.TotalCents > b.max() {
		return errTotal(b.max())
	}
	return nil
}

func validLineCount(n int) *Error {
	if n == 0 {
		return Errorf(KindInvalid, "invalid_lines", "lines must hold at least one line")
	}
	if n > MaxLines {
		return Errorf(KindInvalid, "invalid_lines", "at most %d lines", MaxLines)
	}
	return nil
}

func validLine(i int, barcode string, qty int64) *Error {
	if !ValidBarcode(barcode) {
		return Errorf(KindInvalid, "invalid_barcode", "lines[%d].barcode must be 1-64 of [A-Za-z0-9._-]", i)
	}
	if qty < 1 || qty > MaxQty {
		return Errorf(KindInvalid, "invalid_qty", "lines[%d].qty must be a whole number from 1 to %d", i, MaxQty)
	}
	return nil
}

func errTotal(max int64) *Error {
	return Errorf(KindInvalid, "invalid_amount", "total_cents must be a whole number of cents from 0 to max_sale_cents (%d)", max)
}

func validKey(key string) *Error {
	if !ValidKey(key) {
		return Errorf(KindInvalid, "invalid_idempotency_key", "Idempotency-Key must be 1-64 of [A-Za-z0-9._:-]")
	}
	return nil
}
