package secret

import (
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// Redacted replaces a secret value wherever one would be printed.
const Redacted = "REDACTED"

// queryPassword is a password given as a URL query parameter
// (PostgreSQL accepts ?password=…).
var queryPassword = regexp.MustCompile(`(?i)([?&]password=)[^&\s,"']*`)

// RedactURLs hides the credentials of every URL in text — a single URL,
// a comma-separated list of NATS servers, or an error message quoting
// one: "nats://app:pw@hq:4222" becomes "nats://xxxxx@hq:4222".
//
// Passwords are written raw by operators (a `'`, `@`, `:`, `/` or `%` in
// them, unencoded), so the user info is not what net/url would parse but
// everything from "://" to the last "@" before the URL ends: the next
// white space, or the next "scheme://". A password with an "@" is thus
// hidden whole; more may be hidden than needed, never less. Inside a
// word (no white space) every character a password may hold is covered.
func RedactURLs(text string) string {
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, "://")
		if i < 0 || !schemeBefore(rest[:i]) {
			if i < 0 {
				b.WriteString(rest)
				break
			}
			b.WriteString(rest[:i+3])
			rest = rest[i+3:]
			continue
		}
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		end := strings.IndexAny(rest, " \t\r\n")
		if end < 0 {
			end = len(rest)
		}
		// a list "a://…,b://…": this URL ends at the comma before the
		// next one's scheme (a letter, then scheme characters).
		for off := 0; ; {
			j := strings.Index(rest[off:end], "://")
			if j < 0 {
				break
			}
			j += off
			k := j
			for k > 0 && isSchemeByte(rest[k-1]) {
				k--
			}
			if k > 0 && k < j && rest[k-1] == ',' && (rest[k] >= 'a' && rest[k] <= 'z' || rest[k] >= 'A' && rest[k] <= 'Z') {
				end = k
				break
			}
			off = j + 3
		}
		if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
			b.WriteString("xxxxx")
			rest = rest[at:]
			end -= at
		}
		b.WriteString(rest[:end])
		rest = rest[end:]
	}
	return queryPassword.ReplaceAllString(b.String(), "${1}xxxxx")
}

// schemeBefore reports whether s ends with a URL scheme (a letter, then
// letters, digits, "+", "-", ".").
func schemeBefore(s string) bool {
	k := len(s)
	for k > 0 && isSchemeByte(s[k-1]) {
		k--
	}
	for k < len(s) && !(s[k] >= 'a' && s[k] <= 'z' || s[k] >= 'A' && s[k] <= 'Z') {
		k++
	}
	return k < len(s)
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// Kind is how a config field marked with the struct tag `secret:"…"` is
// printed: "true" never (Redacted), "url" with its credentials hidden.
type Kind int

// Kinds of fields.
const (
	Plain Kind = iota
	Hidden
	URL
)

func fieldKind(f reflect.StructField) Kind {
	switch f.Tag.Get("secret") {
	case "true":
		return Hidden
	case "url":
		return URL
	}
	return Plain
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

// RedactDoc redacts a YAML document decoded into generic values
// (yaml.MapSlice, map[string]any, []any) against the config struct
// schema (a value or pointer of it): a field marked secret is replaced
// by Redacted (URLs keep all but their credentials), and so is the value
// of any key the struct does not know — a misspelt "pasword" is as
// secret as the real one. The doc is changed in place and returned.
func RedactDoc(doc any, schema any) any {
	t := reflect.TypeOf(schema)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return redactDoc(doc, t)
}

func redactDoc(v any, t reflect.Type) any {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	child := func(key string) (reflect.Type, Kind, bool) {
		switch {
		case t == nil:
			return nil, Hidden, false
		case t.Kind() == reflect.Map:
			return t.Elem(), Plain, true
		case t.Kind() == reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				if f.IsExported() && yamlName(f) == key && f.Tag.Get("yaml") != "-" {
					return f.Type, fieldKind(f), true
				}
			}
		}
		return nil, Hidden, false
	}
	fix := func(key string, val any) any {
		ct, kind, known := child(key)
		switch {
		case val == nil || val == "":
			return val
		case !known || kind == Hidden:
			return Redacted
		case kind == URL:
			if s, ok := val.(string); ok {
				return RedactURLs(s)
			}
			return Redacted
		}
		return redactDoc(val, ct)
	}
	switch d := v.(type) {
	case yaml.MapSlice:
		for i, it := range d {
			k, _ := it.Key.(string)
			d[i].Value = fix(k, it.Value)
		}
	case map[string]any:
		for k, val := range d {
			d[k] = fix(k, val)
		}
	case []any:
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			et = t.Elem()
		}
		for i := range d {
			d[i] = redactDoc(d[i], et)
		}
	default:
		if t == nil {
			return Redacted // a value where the struct has none
		}
	}
	return v
}

// Names lists the YAML key names of a config struct by how they are
// printed: a name that is Hidden or URL anywhere counts as such. It is
// for text that does not parse, where only a line's key name is known.
func Names(schema any) map[string]Kind {
	out := map[string]Kind{}
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || depth > 8 {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("yaml") == "-" {
				continue
			}
			n := yamlName(f)
			if k := fieldKind(f); k > out[n] {
				out[n] = k
			} else if _, ok := out[n]; !ok {
				out[n] = k
			}
			walk(f.Type, depth+1)
		}
	}
	t := reflect.TypeOf(schema)
	walk(t, 0)
	return out
}

// YAMLError turns a goccy/go-yaml error into its position and a message
// that quotes neither the source nor a value: the library's error text
// shows the lines around the problem (a typo next to `password:` would
// print the password), and its message may quote a scalar. What is kept:
// the first line, with quoted strings only when src has them as a key.
func YAMLError(err error, src []byte) (line, col int, msg string) {
	first, _, _ := strings.Cut(err.Error(), "\n")
	if m := yamlPos.FindStringSubmatch(first); m != nil {
		line, _ = strconv.Atoi(m[1])
		col, _ = strconv.Atoi(m[2])
		first = m[3]
	}
	first = quoted.ReplaceAllStringFunc(first, func(q string) string {
		inner := q[1 : len(q)-1]
		if keyName.MatchString(inner) && regexp.MustCompile(`(?m)(^|[{,\s])`+regexp.QuoteMeta(inner)+`\s*:`).Match(src) {
			return q
		}
		return `"…"`
	})
	return line, col, strings.TrimSpace(first)
}

var (
	yamlPos = regexp.MustCompile(`^\[(\d+):(\d+)\] (.*)$`)
	quoted  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	keyName = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)
)

// KeyAt is the key named on a line of YAML source (1-based), or "".
func KeyAt(src []byte, line int) string {
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	if m := lineKey.FindStringSubmatch(lines[line-1]); m != nil {
		return m[1]
	}
	return ""
}

var lineKey = regexp.MustCompile(`^\s*(?:-\s*)?([A-Za-z0-9_]+)\s*:`)
