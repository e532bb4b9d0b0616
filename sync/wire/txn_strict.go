package wire

import "github.com/posedge/posedge/internal/strictjson"

// This file is the one-pass reading of a transaction body: the strict key
// rules of checkJSONKeys and the decoding of decodeTxn together, for the
// bodies posedge writes. HQ runs it on every message and the replayer on
// every row it sends; decoding in two scans was a quarter of posedge-hq's
// CPU (docs/performance.md, "posedge-hq: one pass over a body").

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
	keys := strictKeys{names: txnFields.Names}
	ok := r.object(func(key []byte) bool {
		field, ok := keys.take(key)
		if !ok || !field {
			return ok && r.scalar()
		}
		ok, _ = r.txnField(&t, key)
		return ok
	})
	// Money must be there, as the strict check requires.
	if !ok || !keys.sawAll(txnFields.Numbers) {
		return Txn{}, false
	}
	r.space()
	if r.i != len(r.b) {
		return Txn{}, false
	}
	return t, true
}

// strictLine reads one line object as strictTxn reads the body: its
// quantity and price (lineFields' Numbers) must be there.
func (r *txnReader) strictLine(l *Line) bool {
	keys := strictKeys{names: lineFields.Names}
	ok := r.object(func(key []byte) bool {
		field, ok := keys.take(key)
		if !ok || !field {
			return ok && r.scalar()
		}
		ok, _ = r.lineField(l, key)
		return ok
	})
	return ok && keys.sawAll(lineFields.Numbers)
}

// strictKeys are the keys met in one object: its fields (names, at most
// 16) by bit, and the others.
type strictKeys struct {
	names  []string
	seen   uint16
	others keySet
}

// take says whether key is one of the fields (field) and whether the one
// pass may go on (ok): a field met for the first time, or another key
// that keySet.addOther takes.
func (k *strictKeys) take(key []byte) (field, ok bool) {
	bit := fieldBit(key, k.names)
	if bit == 0 {
		return false, k.others.addOther(key, k.names)
	}
	if k.seen&bit != 0 {
		return true, false
	}
	k.seen |= bit
	return true, true
}

// sawAll says whether every field of names was met.
func (k *strictKeys) sawAll(names []string) bool {
	for _, n := range names {
		if k.seen&fieldBit([]byte(n), k.names) == 0 {
			return false
		}
	}
	return true
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
		if strictjson.EqualFoldASCII(n, key) {
			return false
		}
	}
	for _, k := range s.keys[:s.n] {
		if strictjson.EqualFoldASCII(string(k), key) {
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
