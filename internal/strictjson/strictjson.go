package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"unicode"
)

// The ways a text is refused, besides malformed JSON.
var (
	// ErrDuplicateKey: two keys of one object are equal, or equal but for
	// case (encoding/json would keep the last, another reader the first).
	ErrDuplicateKey = errors.New("duplicate key")
	// ErrKeyCase: a key is a decoded field's name in another case
	// (encoding/json would take it for the field).
	ErrKeyCase = errors.New("key in another case than its field")
	// ErrNotNumber: a key listed in Fields.Numbers is missing or holds
	// something other than a number.
	ErrNotNumber = errors.New("amount is not a number")
)

// Fields are the keys of one JSON object that a decoder maps to struct
// fields, and the fields of the objects below some of them.
type Fields struct {
	Names []string
	// Numbers are keys that must be present, each with a JSON number (not
	// null, not a string): money and quantities, where a reader that
	// coerces would see another amount.
	Numbers []string
	Below   map[string]*Fields // the object (or the array of objects) under a key
	// Opaque: the value is kept raw and checked by whoever decodes it
	// later (a json.RawMessage), so Check does not look inside it.
	Opaque bool
}

// MaxDepth bounds the nesting Check follows (encoding/json allows
// 10,000; the bodies this project reads have three or four levels).
const MaxDepth = 64

// Fold maps each rune of s to the smallest rune of its case-folding orbit,
// so that strings.EqualFold(a, b) exactly when Fold(a) == Fold(b).
func Fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// FieldsOf describes the JSON keys encoding/json maps to the fields of
// the struct v points to (or is), following struct, pointer and slice
// fields and embedded structs; nil when v is no struct. A json.RawMessage
// (or a slice of them) is Opaque: its decoder checks it.
func FieldsOf(v any) *Fields {
	return fieldsOf(reflect.TypeOf(v), 0)
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

func fieldsOf(t reflect.Type, depth int) *Fields {
	for t != nil && t != rawMessage && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		t = t.Elem()
	}
	if t == rawMessage {
		return &Fields{Opaque: true}
	}
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || depth > MaxDepth {
		return nil
	}
	f := &Fields{}
	addStruct(f, t, depth)
	return f
}

func addStruct(f *Fields, t reflect.Type, depth int) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" {
			et := sf.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				addStruct(f, et, depth)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f.Names = append(f.Names, name)
		if sub := fieldsOf(sf.Type, depth+1); sub != nil {
			if f.Below == nil {
				f.Below = map[string]*Fields{}
			}
			f.Below[name] = sub
		}
	}
}
