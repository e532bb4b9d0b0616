package wire

import (
	"strconv"
	"unicode/utf8"
)

// txnReader reads a body in the plain form strictTxn takes. It does not
// assume valid JSON: each method reports false when the text is not of
// the plain form it reads, and the body goes the two passes instead.
type txnReader struct {
	b []byte
	i int
}

// txnField reads the value of key into its field of t; known is false
// when key names no field of Txn (nothing read).
func (r *txnReader) txnField(t *Txn, key []byte) (ok, known bool) {
	switch string(key) {
	case "flow_no":
		return r.str(&t.FlowNo), true
	case "store_id":
		return r.str(&t.StoreID), true
	case "terminal_id":
		return r.str(&t.TerminalID), true
	case "kind":
		return r.str(&t.Kind), true
	case "total_cents":
		return r.int(&t.TotalCents), true
	case "tender":
		return r.str(&t.Tender), true
	case "created_at":
		return r.str(&t.CreatedAt), true
	case "occurred_at":
		return r.str(&t.OccurredAt), true
	case "original_flow_no":
		return r.str(&t.OriginalFlowNo), true
	case "lines":
		return r.lineArray(&t.Lines), true
	}
	return false, false
}

// lineField is txnField for a Line.
func (r *txnReader) lineField(l *Line, key []byte) (ok, known bool) {
	switch string(key) {
	case "barcode":
		return r.str(&l.Barcode), true
	case "qty":
		return r.int(&l.Qty), true
	case "price_cents":
		return r.int(&l.PriceCents), true
	}
	return false, false
}

func (r *txnReader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (r *txnReader) peek() byte {
	r.space()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// object reads an object, calling member with each key with the reader
// at the member's value (after the colon).
func (r *txnReader) object(member func(key []byte) bool) bool {
	if r.peek() != '{' {
		return false
	}
	r.i++
	if r.peek() == '}' {
		r.i++
		return true
	}
	for {
		if r.peek() != '"' {
			return false
		}
		key, ok := r.plain()
		if !ok || r.peek() != ':' {
			return false
		}
		r.i++
		if !member(key) {
			return false
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			return false
		}
	}
}

// plain reads a string without escapes whose bytes are valid UTF-8 and
// returns its content (json.Unmarshal would give the same bytes).
func (r *txnReader) plain() ([]byte, bool) {
	start := r.i + 1
	for j := start; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			r.i = j + 1
			s := r.b[start:j]
			return s, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

func (r *txnReader) str(dst *string) bool {
	if r.peek() != '"' {
		return false
	}
	s, ok := r.plain()
	if ok {
		*dst = string(s)
	}
	return ok
}

// int reads -?[0-9]+ that fits int64 (no fraction, no exponent).
func (r *txnReader) int(dst *int64) bool {
	r.space()
	start := r.i
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	if r.i+1 < len(r.b) && r.b[r.i] == '0' && '0' <= r.b[r.i+1] && r.b[r.i+1] <= '9' {
		return false // a leading zero: no JSON number (strictTxn reads unchecked text)
	}
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		r.i++
	}
	if r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		return false
	}
	v, err := strconv.ParseInt(string(r.b[start:r.i]), 10, 64)
	if err != nil {
		return false
	}
	*dst = v
	return true
}

// lineArray reads an array of lines, each with strictLine.
func (r *txnReader) lineArray(dst *[]Line) bool {
	if r.peek() != '[' {
		return false
	}
	r.i++
	lines := []Line{}
	if r.peek() == ']' {
		r.i++
		*dst = lines
		return true
	}
	for {
		var l Line
		if !r.strictLine(&l) {
			return false
		}
		lines = append(lines, l)
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			*dst = lines
			return true
		default:
			return false
		}
	}
}
