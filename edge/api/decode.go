package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/strictjson"
)

// Limits on request bodies.
const (
	maxBodyBytes      = 64 << 10
	maxBatchBodyBytes = 1 << 20
)

// readBody reads at most limit bytes of a request body: beyond it, 413.
func readBody(r *http.Request, limit int64) ([]byte, *ledger.Error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, ledger.Errorf(ledger.KindTooLarge, "body_too_large", "the body exceeds %d bytes", limit)
	}
	if err != nil {
		return nil, ledger.Errorf(ledger.KindInvalid, "invalid_json", "reading the body: %v", err)
	}
	return b, nil
}

// decodeStrict decodes JSON into the struct v points to, refusing what
// two readers could take in two ways (contract §3): a duplicate key in
// any object (invalid_json), a field name in another case than the
// contract's (unknown_field), unknown fields and trailing data.
func decodeStrict(b []byte, v any) *ledger.Error {
	if err := strictjson.Check(b, strictjson.FieldsOf(v)); err != nil {
		if errors.Is(err, strictjson.ErrKeyCase) {
			return ledger.Errorf(ledger.KindInvalid, "unknown_field", "%v", err)
		}
		return ledger.Errorf(ledger.KindInvalid, "invalid_json", "malformed JSON: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return ledger.Errorf(ledger.KindInvalid, "unknown_field", "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return ledger.Errorf(ledger.KindInvalid, "invalid_json", "malformed JSON: %v", err)
	}
	if d.More() {
		return ledger.Errorf(ledger.KindInvalid, "invalid_json", "trailing data after the JSON object")
	}
	return nil
}

// intField parses a JSON number that must be an integer in [min, max].
// Strings, fractions, exponents and out-of-range values are refused.
func intField(raw json.RawMessage, min, max int64) (int64, bool) {
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

// wholeOrInvalid is a count or amount field as the ledger gets it: a
// missing field or one that is not a whole int64 (a string, a fraction,
// an exponent, an overflow) becomes -1, a value every count and amount
// rule refuses with that field's own code and message. So the ledger's
// Validate alone decides, in the order of the body's fields, which rule
// a body breaks first.
func wholeOrInvalid(raw json.RawMessage) int64 {
	n, ok := intField(raw, math.MinInt64, math.MaxInt64)
	if !ok {
		return -1
	}
	return n
}

func strOrEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
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

// parseSale decodes a sale body (contract §3): its shape only. The
// ledger validates what it holds, once, in the order of the body's fields.
func parseSale(b []byte) (ledger.SaleRequest, *ledger.Error) {
	var raw rawSale
	if e := decodeStrict(b, &raw); e != nil {
		return ledger.SaleRequest{}, e
	}
	return raw.sale(), nil
}

func (raw rawSale) sale() ledger.SaleRequest {
	s := ledger.SaleRequest{TotalCents: wholeOrInvalid(raw.TotalCents), Tender: strOrEmpty(raw.Tender),
		ReceiptNo: strOrEmpty(raw.ReceiptNo), CashierID: strOrEmpty(raw.CashierID), OccurredAt: raw.OccurredAt}
	for _, l := range raw.Lines {
		s.Lines = append(s.Lines, ledger.Line{Barcode: strOrEmpty(l.Barcode), Qty: wholeOrInvalid(l.Qty), PriceCents: wholeOrInvalid(l.PriceCents)})
	}
	return s
}

// parseRefund decodes a refund body: its shape only. A line that sends
// a price is marked, and the ledger refuses it in body order.
func parseRefund(b []byte) (ledger.RefundRequest, *ledger.Error) {
	var raw struct {
		OriginalFlowNo *string         `json:"original_flow_no"`
		Lines          []rawLine       `json:"lines"`
		TotalCents     json.RawMessage `json:"total_cents"`
	}
	if e := decodeStrict(b, &raw); e != nil {
		return ledger.RefundRequest{}, e
	}
	r := ledger.RefundRequest{OriginalFlowNo: strOrEmpty(raw.OriginalFlowNo), TotalCents: wholeOrInvalid(raw.TotalCents)}
	for _, l := range raw.Lines {
		r.Lines = append(r.Lines, ledger.RefundLine{Barcode: strOrEmpty(l.Barcode), Qty: wholeOrInvalid(l.Qty), Priced: l.PriceCents != nil})
	}
	return r, nil
}

// parseBatch decodes a batch body; each sale is decoded on its own, its
// refusal kept beside it (a duplicate key inside one sale refuses that
// sale, not the batch). The ledger validates each sale it records.
func parseBatch(b []byte) ([]ledger.BatchSale, *ledger.Error) {
	var raw struct {
		Sales []json.RawMessage `json:"sales"`
	}
	if e := decodeStrict(b, &raw); e != nil {
		return nil, e
	}
	if len(raw.Sales) == 0 || len(raw.Sales) > ledger.MaxBatchSales {
		return nil, ledger.Errorf(ledger.KindInvalid, "batch_too_large", "a batch holds 1 to %d sales, got %d", ledger.MaxBatchSales, len(raw.Sales))
	}
	out := make([]ledger.BatchSale, len(raw.Sales))
	for i, rs := range raw.Sales {
		var one struct {
			IdempotencyKey *string `json:"idempotency_key"`
			rawSale
		}
		if e := decodeStrict(rs, &one); e != nil {
			out[i].Err = e
			continue
		}
		if one.IdempotencyKey == nil {
			out[i].Err = ledger.Errorf(ledger.KindInvalid, "idempotency_key_missing", "sales[%d].idempotency_key is required", i)
			continue
		}
		if !ledger.ValidKey(*one.IdempotencyKey) {
			out[i].Err = ledger.Errorf(ledger.KindInvalid, "invalid_idempotency_key", "sales[%d].idempotency_key must be 1-64 of [A-Za-z0-9._:-]", i)
			continue
		}
		out[i].Key = *one.IdempotencyKey
		out[i].Sale = one.rawSale.sale()
	}
	return out, nil
}

// idemKey reads the required Idempotency-Key header.
func idemKey(r *http.Request) (string, *ledger.Error) {
	k := r.Header.Get("Idempotency-Key")
	if k == "" {
		return "", ledger.Errorf(ledger.KindInvalid, "idempotency_key_missing", "the Idempotency-Key header is required")
	}
	if !ledger.ValidKey(k) {
		return "", ledger.Errorf(ledger.KindInvalid, "invalid_idempotency_key", "Idempotency-Key must be 1-64 of [A-Za-z0-9._:-]")
	}
	return k, nil
}
