package wire

// This file is the one-pass reading of a transaction body: the strict key
// rules of checkJSONKeys and the decoding of decodeTxn together, for the
// bodies posedge writes. HQ runs it on every message and the replayer on
// every row it sends; two passes were a quarter of posedge-hq's CPU a row
// (docs/performance.md, "One pass over a body").

// strictTxn reads body as checkJSONKeys then decodeTxn would, in one pass:
// ok means both would accept it and decodeTxn would give t. It takes only
// the plain form: an object whose keys are ASCII without escapes, each
// field at most once and in its own case, strings without escapes, money
// and quantities as plain integers, and any other key's value a string,
// a number or a literal. Anything else, and every refusal, reports false:
// the two passes then decide and say why (FuzzStrictTxnAgrees holds the
// two ways together).
func strictTxn(body []byte) (Txn, bool) {
	r := txnReader{b: body}
	var t Txn
	var seen uint16
	var others keySet
	ok := r.object(func(key []byte) bool {
		bit := fieldBit(key, txnFields.Names)
		if bit == 0 {
			return others.addOther(key, txnFields.Names) && r.scalar()
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		switch string(key) {
		case "flow_no":
			return r.str(&t.FlowNo)
		case "store_id":
			return r.str(&t.StoreID)
		case "terminal_id":
			return r.str(&t.TerminalID)
		case "kind":
			return r.str(&t.Kind)
		case "total_cents":
			return r.int(&t.TotalCents)
		case "tender":
			return r.str(&t.Tender)
		case "created_at":
			return r.str(&t.CreatedAt)
		case "occurred_at":
			return r.str(&t.OccurredAt)
		case "original_flow_no":
			return r.str(&t.OriginalFlowNo)
		case "lines":
			return r.strictLines(&t.Lines)
		}
		return false
	})
	// total_cents is one of txnFields.Numbers: it must be there.
	if !ok || seen&fieldBit([]byte("total_cents"), txnFields.Names) == 0 {
		return Txn{}, false
	}
	r.space()
	if r.i != len(r.b) {
		return Txn{}, false
	}
	return t, true
}

// strictLines reads the lines array as strictTxn reads the body: every
// line an object with each field at most once, qty and price_cents (the
// Numbers of lineFields) present as plain integers.
func (r *txnReader) strictLines(dst *[]Line) bool {
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
	numbers := fieldBit([]byte("qty"), lineFields.Names) | fieldBit([]byte("price_cents"), lineFields.Names)
	for {
		var l Line
		var seen uint16
		var others keySet
		ok := r.object(func(key []byte) bool {
			bit := fieldBit(key, lineFields.Names)
			if bit == 0 {
				return others.addOther(key, lineFields.Names) && r.scalar()
			}
			if seen&bit != 0 {
				return false
			}
			seen |= bit
			switch string(key) {
			case "barcode":
				return r.str(&l.Barcode)
			case "qty":
				return r.int(&l.Qty)
			case "price_cents":
				return r.int(&l.PriceCents)
			}
			return false
		})
		if !ok || seen&numbers != numbers {
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

// fieldBit is key's bit among names (at most 16), 0 when key is none of
// them exactly.
func fieldBit(key []byte, names []string) uint16 {
	for i, n := range names {
		if string(key) == n {
			return 1 << i
		}
	}
	return 0
}

// keySet holds the keys of one object that are no field; a few suffice
// for the bodies posedge writes (receipt_no, cashier_id).
type keySet struct {
	keys [4][]byte
	n    int
}

// addOther takes a key that is no field: it must be ASCII (so that ASCII
// case folding is Unicode's, and no key can be a field's name in a
// folding of another alphabet), equal but for case to no field and to no
// other key of the object.
func (s *keySet) addOther(key []byte, names []string) bool {
	for _, c := range key {
		if c >= 0x80 {
			return false
		}
	}
	for _, n := range names {
		if asciiEqualFold(key, n) {
			return false
		}
	}
	for _, k := range s.keys[:s.n] {
		if asciiEqualFold(key, string(k)) {
			return false
		}
	}
	if s.n == len(s.keys) {
		return false
	}
	s.keys[s.n] = key
	s.n++
	return true
}

func asciiEqualFold(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// scalar steps over the value of a key that is no field: a string without
// escapes, a JSON number or a literal; false for anything else (an object
// or array is left to the two passes, which look inside it).
func (r *txnReader) scalar() bool {
	switch c := r.peek(); {
	case c == '"':
		_, ok := r.plain()
		return ok
	case c == '-' || '0' <= c && c <= '9':
		return r.number()
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(r.b)-r.i >= len(lit) && string(r.b[r.i:r.i+len(lit)]) == lit {
			r.i += len(lit)
			return true
		}
	}
	return false
}

// number steps over a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *txnReader) number() bool {
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.b) && r.b[r.i] == '0':
		r.i++
	case r.i < len(r.b) && '1' <= r.b[r.i] && r.b[r.i] <= '9':
		r.digits()
	default:
		return false
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if !r.digits() {
			return false
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if !r.digits() {
			return false
		}
	}
	return true
}

// digits steps over [0-9]+; false when there is none.
func (r *txnReader) digits() bool {
	start := r.i
	for r.i < len(r.b) && '0' <= r.b[r.i] && r.b[r.i] <= '9' {
		r.i++
	}
	return r.i > start
}
