package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Limits on input.
const (
	MaxBodyBytes      = 64 << 10
	MaxBatchBodyBytes = 1 << 20
	MaxBatchSales     = 100
	MaxLines          = 200
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

// Line is one validated line.
type Line struct {
	Barcode    string `json:"barcode"`
	Qty        int64  `json:"qty"`
	PriceCents int64  `json:"price_cents"`
}

// SaleRequest is a validated sale body.
type SaleRequest struct {
	Lines      []Line `json:"lines"`
	TotalCents int64  `json:"total_cents"`
	Tender     string `json:"tender"`
	ReceiptNo  string `json:"receipt_no,omitempty"`
	CashierID  string `json:"cashier_id,omitempty"`
	OccurredAt string `json:"occurred_at,omitempty"`
}

// RefundRequest is a validated refund body.
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

// Fingerprint identifies a request body for idempotency: the same key with
// another fingerprint is a reused key.
func Fingerprint(v any) string {
	b, _ := json.Marshal(v)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:16])
}

type rawLine struct {
	Barcode    *string         `json:"barcode"`
	Qty        json.RawMessage `json:"qty"`
	PriceCents json.RawMessage `json:"price_cents"`
}

type rawSale struct {
	Lines      []rawLine       `json:"lines"`
	TotalCents json.RawMessage `json:"total_cents"`
	Tender     *string         `json:"tender"`
	ReceiptNo  *string         `json:"receipt_no"`
	CashierID  *string         `json:"cashier_id"`
	OccurredAt *string         `json:"occurred_at"`
}

// ReadBody reads at most limit bytes of a request body: beyond it, 413.
func ReadBody(r *http.Request, limit int64) ([]byte, *Error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, errf(http.StatusRequestEntityTooLarge, "body_too_large", "the body exceeds %d bytes", limit)
	}
	if err != nil {
		return nil, errf(http.StatusBadRequest, "invalid_json", "reading the body: %v", err)
	}
	return b, nil
}

// DecodeStrict decodes JSON, rejecting unknown fields and trailing data.
func DecodeStrict(b []byte, v any) *Error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return errf(http.StatusBadRequest, "unknown_field", "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return errf(http.StatusBadRequest, "invalid_json", "malformed JSON: %v", err)
	}
	if d.More() {
		return errf(http.StatusBadRequest, "invalid_json", "trailing data after the JSON object")
	}
	return nil
}

// IntField parses a JSON number that must be an integer in [min, max].
// Strings, fractions, exponents and out-of-range values are refused.
func IntField(raw json.RawMessage, min, max int64) (int64, bool) {
	s := string(bytes.TrimSpace(raw))
	if s == "" || s == "null" {
		return 0, false
	}
	for i, c := range s {
		if !(c >= '0' && c <= '9') && !(i == 0 && c == '-') {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < min || n > max {
		return 0, false
	}
	return n, true
}

func validLines(raw []rawLine, needPrice bool) ([]Line, *Error) {
	if len(raw) == 0 {
		return nil, errf(http.StatusBadRequest, "invalid_lines", "lines must hold at least one line")
	}
	if len(raw) > MaxLines {
		return nil, errf(http.StatusBadRequest, "invalid_lines", "at most %d lines", MaxLines)
	}
	out := make([]Line, len(raw))
	for i, l := range raw {
		if l.Barcode == nil || !barcodeRE.MatchString(*l.Barcode) {
			return nil, errf(http.StatusBadRequest, "invalid_barcode", "lines[%d].barcode must be 1-64 of [A-Za-z0-9._-]", i)
		}
		q, ok := IntField(l.Qty, 1, MaxQty)
		if !ok {
			return nil, errf(http.StatusBadRequest, "invalid_qty", "lines[%d].qty must be a whole number from 1 to %d", i, MaxQty)
		}
		out[i] = Line{Barcode: *l.Barcode, Qty: q}
		if needPrice {
			p, ok := IntField(l.PriceCents, 0, MaxCents)
			if !ok {
				return nil, errf(http.StatusBadRequest, "invalid_amount", "lines[%d].price_cents must be a whole, non-negative number of cents", i)
			}
			out[i].PriceCents = p
		} else if l.PriceCents != nil {
			return nil, errf(http.StatusBadRequest, "unknown_field", "lines[%d].price_cents: a refund line is priced from the original sale", i)
		}
	}
	return out, nil
}

// ParseSale validates a sale body (contract §3).
func ParseSale(b []byte) (SaleRequest, *Error) {
	var raw rawSale
	if e := DecodeStrict(b, &raw); e != nil {
		return SaleRequest{}, e
	}
	return validSale(raw)
}

func validSale(raw rawSale) (SaleRequest, *Error) {
	var s SaleRequest
	lines, e := validLines(raw.Lines, true)
	if e != nil {
		return s, e
	}
	s.Lines = lines
	total, ok := IntField(raw.TotalCents, 0, math.MaxInt64)
	if !ok {
		return s, errf(http.StatusBadRequest, "invalid_amount", "total_cents must be a whole, non-negative number of cents")
	}
	var sum int64
	for _, l := range lines {
		sum += l.Qty * l.PriceCents // bounded: MaxLines × MaxQty × MaxCents < 2^63
	}
	if sum != total {
		return s, errf(http.StatusBadRequest, "total_mismatch", "total_cents %d is not the sum of qty×price_cents, %d", total, sum)
	}
	s.TotalCents = total
	if raw.Tender == nil || !tenders[*raw.Tender] {
		return s, errf(http.StatusBadRequest, "invalid_tender", "tender must be cash, card, mobile or other")
	}
	s.Tender = *raw.Tender
	if raw.ReceiptNo != nil {
		if len(*raw.ReceiptNo) > 64 {
			return s, errf(http.StatusBadRequest, "invalid_receipt_no", "receipt_no is at most 64 bytes")
		}
		s.ReceiptNo = *raw.ReceiptNo
	}
	if raw.CashierID != nil {
		if len(*raw.CashierID) > 32 {
			return s, errf(http.StatusBadRequest, "invalid_cashier_id", "cashier_id is at most 32 bytes")
		}
		s.CashierID = *raw.CashierID
	}
	if raw.OccurredAt != nil {
		t, err := time.Parse(time.RFC3339, *raw.OccurredAt)
		if err != nil {
			return s, errf(http.StatusBadRequest, "invalid_occurred_at", "occurred_at must be RFC3339, e.g. 2026-11-30T10:00:00Z")
		}
		s.OccurredAt = t.UTC().Format(time.RFC3339Nano)
	}
	return s, nil
}

// ParseRefund validates a refund body.
func ParseRefund(b []byte) (RefundRequest, *Error) {
	var raw struct {
		OriginalFlowNo *string         `json:"original_flow_no"`
		Lines          []rawLine       `json:"lines"`
		TotalCents     json.RawMessage `json:"total_cents"`
	}
	var r RefundRequest
	if e := DecodeStrict(b, &raw); e != nil {
		return r, e
	}
	if raw.OriginalFlowNo == nil || !flowRE.MatchString(*raw.OriginalFlowNo) {
		return r, errf(http.StatusBadRequest, "invalid_flow_no", "original_flow_no must be the digits of a flow number")
	}
	lines, e := validLines(raw.Lines, false)
	if e != nil {
		return r, e
	}
	total, ok := IntField(raw.TotalCents, 0, math.MaxInt64)
	if !ok {
		return r, errf(http.StatusBadRequest, "invalid_amount", "total_cents must be a whole, non-negative number of cents")
	}
	r.OriginalFlowNo, r.TotalCents = *raw.OriginalFlowNo, total
	for _, l := range lines {
		r.Lines = append(r.Lines, RefundLine{Barcode: l.Barcode, Qty: l.Qty})
	}
	return r, nil
}

// BatchSale is one sale of a batch upload, with its own key.
type BatchSale struct {
	Key  string
	Sale SaleRequest
	Err  *Error // set when this sale alone is refused
}

// ParseBatch validates a batch body; each sale is validated on its own.
func ParseBatch(b []byte) ([]BatchSale, *Error) {
	var raw struct {
		Sales []json.RawMessage `json:"sales"`
	}
	if e := DecodeStrict(b, &raw); e != nil {
		return nil, e
	}
	if len(raw.Sales) == 0 || len(raw.Sales) > MaxBatchSales {
		return nil, errf(http.StatusBadRequest, "batch_too_large", "a batch holds 1 to %d sales, got %d", MaxBatchSales, len(raw.Sales))
	}
	out := make([]BatchSale, len(raw.Sales))
	for i, rs := range raw.Sales {
		var one struct {
			IdempotencyKey *string `json:"idempotency_key"`
			rawSale
		}
		if e := DecodeStrict(rs, &one); e != nil {
			out[i].Err = e
			continue
		}
		if one.IdempotencyKey == nil {
			out[i].Err = errf(http.StatusBadRequest, "idempotency_key_missing", "sales[%d].idempotency_key is required", i)
			continue
		}
		if !keyRE.MatchString(*one.IdempotencyKey) {
			out[i].Err = errf(http.StatusBadRequest, "invalid_idempotency_key", "sales[%d].idempotency_key must be 1-64 of [A-Za-z0-9._:-]", i)
			continue
		}
		out[i].Key = *one.IdempotencyKey
		out[i].Sale, out[i].Err = validSale(one.rawSale)
	}
	return out, nil
}
