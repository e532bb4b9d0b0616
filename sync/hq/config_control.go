package hq

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// controlChars refuses a control character in any value of the file,
// naming the key and never quoting the value (it may be a secret), as
// posedge's check-config does: a newline or an escape in a path, a URL
// or a name reaches logs, units and terminals as more than one value
// (issue 22 finding 9). Surrounding white space is trimmed as it is read.
func (v *validator) controlChars(fc *fileConfig) {
	var walk func(rv reflect.Value, prefix string)
	walk = func(rv reflect.Value, prefix string) {
		for rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				return
			}
			rv = rv.Elem()
		}
		switch rv.Kind() {
		case reflect.String:
			if i := strings.IndexFunc(strings.TrimSpace(rv.String()), unicode.IsControl); i >= 0 {
				v.add(prefix, "", fmt.Errorf("must not contain control characters (found one at byte %d)", i))
			}
		case reflect.Struct:
			for i := range rv.NumField() {
				name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("yaml"), ",")
				if prefix != "" {
					name = prefix + "." + name
				}
				walk(rv.Field(i), name)
			}
		}
	}
	walk(reflect.ValueOf(fc), "")
}
