package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Check refuses a JSON text with two keys of one object equal but for
// case (or equal), at any depth, and a key of an object described by f
// that is one of its field names but for case. f may be nil: duplicates
// are still refused everywhere. Errors wrap ErrDuplicateKey or
// ErrKeyCase; any other error is malformed JSON.
//
// It is one pass over the bytes that allocates only for keys needing
// decoding (escapes, non-ASCII): posedge-hq runs it on every message,
// and the json.Decoder.Token walk it replaces spent most of HQ's ingest
// CPU boxing tokens. It gives every input the verdict that walk gave,
// which is what encoding/json accepts: the tests keep the walk as a
// reference and fuzz the two against each other.
func Check(body []byte, f *Fields) error {
	s := scanner{b: body}
	if err := s.value(f, 0); err != nil {
		return err
	}
	s.space()
	if s.i < len(s.b) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// rawMaxDepth is encoding/json's own nesting limit, which is the one
// that holds inside an Opaque value (decoded as a json.RawMessage).
const rawMaxDepth = 10000

var errEOF = errors.New("unexpected end of JSON input")

type scanner struct {
	b []byte
	i int
}

func (s *scanner) syntax(what string) error {
	if s.i >= len(s.b) {
		return errEOF
	}
	return fmt.Errorf("invalid character %q %s at offset %d", s.b[s.i], what, s.i)
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value checks one value described by f at nesting depth.
func (s *scanner) value(f *Fields, depth int) error {
	if depth > MaxDepth {
		return errors.New("JSON nested too deep")
	}
	if f != nil && f.Opaque {
		return s.skip(0)
	}
	s.space()
	if s.i >= len(s.b) {
		return errEOF
	}
	switch s.b[s.i] {
	case '[':
		s.i++
		return s.array(func() error { return s.value(f, depth+1) })
	case '{':
		s.i++
		return s.object(f, depth)
	default:
		_, err := s.scalar()
		return err
	}
}

// skip checks the syntax of one value without looking at its keys.
func (s *scanner) skip(depth int) error {
	if depth >= rawMaxDepth {
		return errors.New("exceeded max depth")
	}
	s.space()
	if s.i >= len(s.b) {
		return errEOF
	}
	switch s.b[s.i] {
	case '[':
		s.i++
		return s.array(func() error { return s.skip(depth + 1) })
	case '{':
		s.i++
		s.space()
		if s.i < len(s.b) && s.b[s.i] == '}' {
			s.i++
			return nil
		}
		for {
			s.space()
			if s.i >= len(s.b) || s.b[s.i] != '"' {
				return s.syntax("looking for beginning of object key string")
			}
			if err := s.skipString(); err != nil {
				return err
			}
			if err := s.colon(); err != nil {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			if done, err := s.next('}'); done || err != nil {
				return err
			}
		}
	default:
		_, err := s.scalar()
		return err
	}
}

// array checks the elements of an array whose '[' was read.
func (s *scanner) array(elem func() error) error {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		if done, err := s.next(']'); done || err != nil {
			return err
		}
	}
}

// next reads the ',' between members or the closing delimiter.
func (s *scanner) next(closing byte) (done bool, err error) {
	s.space()
	switch {
	case s.i >= len(s.b):
		return true, errEOF
	case s.b[s.i] == ',':
		s.i++
		return false, nil
	case s.b[s.i] == closing:
		s.i++
		return true, nil
	}
	return true, s.syntax("after a value")
}

func (s *scanner) colon() error {
	s.space()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return s.syntax("after object key")
	}
	s.i++
	return nil
}

// smallObject is how many keys an object holds before they are kept in
// a map instead of compared one by one (a hostile object of 50,000 keys
// must not cost 50,000² comparisons).
const smallObject = 16

// object checks the members of an object whose '{' was read.
func (s *scanner) object(f *Fields, depth int) error {
	var (
		small [smallObject][]byte
		keys  = small[:0]
		many  map[string]struct{} // folded keys, once there are more than smallObject
	)
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return numbersPresent(f, keys)
	}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return s.syntax("looking for beginning of object key string")
		}
		k, ascii, err := s.key()
		if err != nil {
			return err
		}
		if many == nil {
			for _, p := range keys {
				// bytes.EqualFold(a, b) exactly when Fold(a) == Fold(b).
				if bytes.EqualFold(p, k) {
					return fmt.Errorf("%w: %q twice in one object (%q)", ErrDuplicateKey, k, p)
				}
			}
			if len(keys) == smallObject {
				many = make(map[string]struct{}, 2*smallObject)
				for _, p := range keys {
					many[Fold(string(p))] = struct{}{}
				}
			}
		}
		if many != nil {
			fk := Fold(string(k))
			if _, dup := many[fk]; dup {
				return fmt.Errorf("%w: %q twice in one object", ErrDuplicateKey, k)
			}
			many[fk] = struct{}{}
		}
		// Kept for numbersPresent; k is the body's own bytes unless the
		// key needed decoding.
		keys = append(keys, k)
		if f != nil && f.isNumber(k) {
			if err := s.colon(); err != nil {
				return err
			}
			if err := s.number(k); err != nil {
				return err
			}
		} else {
			var sub *Fields
			if f != nil {
				if n, ok := f.otherCase(k, ascii); ok {
					return fmt.Errorf("%w: key %q, the field is %q", ErrKeyCase, k, n)
				}
				sub = f.Below[string(k)]
			}
			if depth+1 > MaxDepth {
				return errors.New("JSON nested too deep")
			}
			if err := s.colon(); err != nil {
				return err
			}
			if err := s.value(sub, depth+1); err != nil {
				return err
			}
		}
		done, err := s.next('}')
		if err != nil {
			return err
		}
		if done {
			return numbersPresent(f, keys)
		}
	}
}

// number checks the value of a Numbers key: a JSON number.
func (s *scanner) number(k []byte) error {
	s.space()
	if s.i < len(s.b) && (s.b[s.i] == '{' || s.b[s.i] == '[') {
		return fmt.Errorf("%w: %s: %c", ErrNotNumber, k, s.b[s.i])
	}
	start := s.i
	isNumber, err := s.scalar()
	if err != nil {
		return err
	}
	if !isNumber {
		return fmt.Errorf("%w: %s: %s", ErrNotNumber, k, s.b[start:s.i])
	}
	return nil
}

// numbersPresent refuses an object described by f that lacks one of its
// Numbers keys (spelt exactly).
func numbersPresent(f *Fields, keys [][]byte) error {
	if f == nil {
		return nil
	}
	for _, n := range f.Numbers {
		found := false
		for _, k := range keys {
			if string(k) == n {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%w: %s missing", ErrNotNumber, n)
		}
	}
	return nil
}

func (f *Fields) isNumber(k []byte) bool {
	for _, n := range f.Numbers {
		if string(k) == n {
			return true
		}
	}
	return false
}

// otherCase returns the field name k equals but for case, if any.
func (f *Fields) otherCase(k []byte, ascii bool) (string, bool) {
	for _, n := range f.Names {
		if string(k) == n {
			continue
		}
		if ascii && isASCII(n) {
			if EqualFoldASCII(n, k) {
				return n, true
			}
		} else if strings.EqualFold(n, string(k)) {
			return n, true
		}
	}
	return "", false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// EqualFoldASCII reports whether a and b are equal but for the case of
// ASCII letters (for ASCII text, Unicode's simple folding says the same).
func EqualFoldASCII(a string, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
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

// scalar checks a string, number or literal and tells whether it was a
// number.
func (s *scanner) scalar() (isNumber bool, err error) {
	if s.i >= len(s.b) {
		return false, errEOF
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return false, s.skipString()
	case c == '-' || isDigit(c):
		return true, s.num()
	case c == 't':
		return false, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == 'n':
		return false, s.literal("null")
	}
	return false, s.syntax("looking for beginning of value")
}

func (s *scanner) literal(word string) error {
	for j := 0; j < len(word); j++ {
		if s.i >= len(s.b) {
			return errEOF
		}
		if s.b[s.i] != word[j] {
			return s.syntax("in literal " + word)
		}
		s.i++
	}
	return nil
}

// num reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) num() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i >= len(s.b):
		return errEOF
	case s.b[s.i] == '0':
		s.i++
	case '1' <= s.b[s.i] && s.b[s.i] <= '9':
		s.digits()
	default:
		return s.syntax("in numeric literal")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.i >= len(s.b) {
			return errEOF
		}
		if !isDigit(s.b[s.i]) {
			return s.syntax("after decimal point in numeric literal")
		}
		s.digits()
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.i >= len(s.b) {
			return errEOF
		}
		if !isDigit(s.b[s.i]) {
			return s.syntax("in exponent of numeric literal")
		}
		s.digits()
	}
	return nil
}

func (s *scanner) digits() {
	for s.i < len(s.b) && isDigit(s.b[s.i]) {
		s.i++
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// scanString reads a string whose '"' is at s.i and tells whether it
// is plain: no escape and ASCII only.
func (s *scanner) scanString() (plain bool, err error) {
	s.i++
	plain = true
	for {
		if s.i >= len(s.b) {
			return false, errEOF
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return plain, nil
		case c < 0x20:
			return false, s.syntax("in string literal")
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(s.b) {
				return false, errEOF
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for range 4 {
					if s.i >= len(s.b) {
						return false, errEOF
					}
					if !isHex(s.b[s.i]) {
						return false, s.syntax(`in \u hexadecimal character escape`)
					}
					s.i++
				}
			default:
				return false, s.syntax("in string escape code")
			}
		default:
			if c >= utf8.RuneSelf {
				plain = false
			}
			s.i++
		}
	}
}

func (s *scanner) skipString() error {
	_, err := s.scanString()
	return err
}

// key reads an object key and returns its value: the body's own bytes
// when the key is plain (ascii true), else encoding/json's decoding of
// it, so that keys compare as encoding/json sees them (invalid UTF-8 and
// lone surrogates become U+FFFD).
func (s *scanner) key() (k []byte, ascii bool, err error) {
	start := s.i
	plain, err := s.scanString()
	if err != nil {
		return nil, false, err
	}
	if plain {
		return s.b[start+1 : s.i-1], true, nil
	}
	var d string
	if err := json.Unmarshal(s.b[start:s.i], &d); err != nil {
		return nil, false, fmt.Errorf("decoding a key: %w", err)
	}
	return []byte(d), false, nil
}
