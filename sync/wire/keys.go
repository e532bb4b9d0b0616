package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// fields are the keys of one JSON object that a decoder maps to struct
// fields, and the fields of the objects below some of them.
type fields struct {
	names []string
	below map[string]*fields // the object (or the array of objects) under a key
}

var (
	lineFields = &fields{names: []string{"barcode", "qty", "price_cents"}}
	txnFields  = &fields{
		names: []string{"flow_no", "store_id", "terminal_id", "kind", "total_cents", "tender",
			"created_at", "occurred_at", "original_flow_no", "lines"},
		below: map[string]*fields{"lines": lineFields},
	}
)

// maxDepth bounds the nesting checkKeys follows (encoding/json allows
// 10,000; a transaction body has three levels).
const maxDepth = 64

// checkKeys refuses a JSON text with two keys of one object equal but
// for case (or equal), and a key that is one of the decoded field names
// but for case: encoding/json matches keys without regard to case and
// keeps the last duplicate, so such a body means different things to
// different readers.
func checkKeys(body []byte, f *fields) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := walk(d, f, 0); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

func walk(d *json.Decoder, f *fields, depth int) error {
	if depth > maxDepth {
		return errors.New("JSON nested too deep")
	}
	tok, err := d.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '[':
		for d.More() {
			if err := walk(d, f, depth+1); err != nil {
				return err
			}
		}
	case '{':
		seen := map[string]string{} // folded key → key
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			fk := fold(k)
			if s, dup := seen[fk]; dup {
				return fmt.Errorf("key %q twice in one object (%q)", k, s)
			}
			seen[fk] = k
			var sub *fields
			if f != nil {
				for _, n := range f.names {
					if strings.EqualFold(n, k) && n != k {
						return fmt.Errorf("key %q: the field is %q", k, n)
					}
				}
				sub = f.below[k]
			}
			if err := walk(d, sub, depth+1); err != nil {
				return err
			}
		}
	}
	_, err = d.Token() // the closing delimiter
	return err
}

// fold maps each rune of s to the smallest rune of its case-folding orbit,
// so that strings.EqualFold(a, b) exactly when fold(a) == fold(b).
func fold(s string) string {
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
