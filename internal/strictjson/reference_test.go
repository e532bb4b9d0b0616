package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// checkTokens is the first Check, built on json.Decoder.Token: slow (it
// boxes every token) but plainly right. The scanner Check now is must
// agree with it on every input; FuzzCheckAgreesWithTokens holds it to
// that.
// (was Check) refuses a JSON text with two keys of one object equal but for
// case (or equal), at any depth, and a key of an object described by f
// that is one of its field names but for case. f may be nil: duplicates
// are still refused everywhere. Errors wrap ErrDuplicateKey or
// ErrKeyCase; any other error is malformed JSON.
func checkTokens(body []byte, f *Fields) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := walkTokens(d, f, 0); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}

func walkTokens(d *json.Decoder, f *Fields, depth int) error {
	if depth > MaxDepth {
		return errors.New("JSON nested too deep")
	}
	if f != nil && f.Opaque {
		var raw json.RawMessage
		return d.Decode(&raw)
	}
	tok, err := d.Token()
	if err != nil {
		return err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	seen := map[string]string{} // folded key → key, of an object
	switch delim {
	case '[':
		for d.More() {
			if err := walkTokens(d, f, depth+1); err != nil {
				return err
			}
		}
	case '{':
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			fk := Fold(k)
			if s, dup := seen[fk]; dup {
				return fmt.Errorf("%w: %q twice in one object (%q)", ErrDuplicateKey, k, s)
			}
			seen[fk] = k
			var sub *Fields
			if f != nil && slices.Contains(f.Numbers, k) {
				vt, err := d.Token()
				if err != nil {
					return err
				}
				if _, ok := vt.(json.Number); !ok {
					return fmt.Errorf("%w: %s: %v", ErrNotNumber, k, vt)
				}
				continue
			}
			if f != nil {
				for _, n := range f.Names {
					if strings.EqualFold(n, k) && n != k {
						return fmt.Errorf("%w: key %q, the field is %q", ErrKeyCase, k, n)
					}
				}
				sub = f.Below[k]
			}
			if err := walkTokens(d, sub, depth+1); err != nil {
				return err
			}
		}
	}
	_, err = d.Token() // the closing delimiter
	if err != nil || delim != '{' || f == nil {
		return err
	}
	for _, n := range f.Numbers {
		if seen[Fold(n)] != n {
			return fmt.Errorf("%w: %s missing", ErrNotNumber, n)
		}
	}
	return nil
}
