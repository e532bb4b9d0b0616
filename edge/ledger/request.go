package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"time"
)

// Limits of a request's content. Transport limits (body sizes) belong to
// the caller that reads the request.
const (
	MaxBatchSales = 100
	MaxLines      = 200
	// MaxCents bounds one amount so no sum of a sale can overflow int64.
	MaxCents = 1_000_000_000_000
	MaxQty   = 1_000_000
)

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
	OccurredAt string `json:"occurred_at,omitempty"` // RFC3339; "" = now
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
func (s SaleRequest) Validate() *Error {
	if e := validLineCount(len(s.Lines)); e != nil {
		return e
	}
	for i, l := range s.Lines {
		if e := validLine(i, l.Barcode, l.Qty); e != nil {
			return e
		}
		if l.PriceCents < 0 || l.PriceCents > MaxCents {
			return Errorf(KindInvalid, "invalid_amount", "lines[%d].price_cents must be a whole, non-negative number of cents", i)
		}
	}
	if s.TotalCents < 0 {
		return errTotal()
	}
	var sum int64
	for _, l := range s.Lines {
		sum += l.Qty * l.PriceCents // bounded: MaxLines × MaxQty × MaxCents < 2^63
	}
	if sum != s.TotalCents {
		return Errorf(KindInvalid, "total_mismatch", "total_cents %d is not the sum of qty×price_cents, %d", s.TotalCents, sum)
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
	if s.OccurredAt != "" {
		if _, err := time.Parse(time.RFC3339, s.OccurredAt); err != nil {
			return ErrOccurredAt()
		}
	}
	return nil
}

// ErrOccurredAt is the refusal of an occurred_at that is not RFC3339.
func ErrOccurredAt() *Error {
	return Errorf(KindInvalid, "invalid_occurred_at", "occurred_at must be RFC3339, e.g. 2026-11-30T10:00:00Z")
}

// Validate checks a refund's form; whether the sale it refers to allows
// it is checked by Refund.
func (r RefundRequest) Validate() *Error {
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
	}
	if r.TotalCents < 0 {
		return errTotal()
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

func errTotal() *Error {
	return Errorf(KindInvalid, "invalid_amount", "total_cents must be a whole, non-negative number of cents")
}

func validKey(key string) *Error {
	if !ValidKey(key) {
		return Errorf(KindInvalid, "invalid_idempotency_key", "Idempotency-Key must be 1-64 of [A-Za-z0-9._:-]")
	}
	return nil
}
