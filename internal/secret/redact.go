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

// RedactURLs hides the credentials of every URL in text — a single URL,
// a comma-separated list of NATS servers, or an error message quoting
// one: "nats://app:pw@hq:4222" becomes "nats://xxxxx@hq:4222", and the
// value of a query parameter named like a secret ("?password=…",
// "&sslpassword=…", "…token…", "…secret…", "…key…") becomes "xxxxx".
//
// Passwords are written raw by operators (a `'`, `@`, `:`, `/`, `%` or a
// space in them, unencoded), so a URL is not split the way net/url would
// parse it. It runs from "scheme://" to the end of its line, or to the
// next URL when what comes before that one is a whole URL (it holds an
// "@", or its first word is a host[:port] with an optional path) and the
// next one's user info is not empty (a password ending "x://"): a list
// "a://…,b://…" or two URLs in one message. Its user info ends at the
// last "@" before the URL ends, or before its first secret query
// parameter (a password may hold "@" and spaces: "nats://app:my
// p@ss@hq").
// A secret query value runs to the next "&name=" or the end of the
// URL. So a password is hidden whole, whatever it holds but a line
// break (config values refuse control characters): more may be hidden
// than needed — the text after such a URL on its line — never less.
func RedactURLs(text string) string {
	var b strings.Builder
	rest := text
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		if !schemeBefore(text[:len(text)-len(rest)-3]) {
			continue
		}
		end := urlEnd(rest)
		u := rest[:end]
		// The user info ends at the last "@" before the query's first
		// secret parameter: a "?password=p@ss" is the query's.
		if at := strings.LastIndexByte(u[:firstSecretParam(u)], '@'); at >= 0 {
			b.WriteString("xxxxx")
			u = u[at:]
		}
		b.WriteString(redactQuery(u))
		rest = rest[end:]
	}
	return b.String()
}

// urlEnd is where the URL that rest starts (just after its "://") ends:
// the end of the line, or the start of the next URL's scheme when the
// text before it is a whole URL.
func urlEnd(rest string) int {
	end := strings.IndexAny(rest, "\r\n")
	if end < 0 {
		end = len(rest)
	}
	for off := 0; ; {
		j := strings.Index(rest[off:end], "://")
		if j < 0 {
			return end
		}
		j += off
		k := j
		for k > 0 && isSchemeByte(rest[k-1]) {
			k--
		}
		for k < j && !isLetter(rest[k]) {
			k++
		}
		// After a secret query parameter the value may hold anything.
		// A "scheme://" followed at once by "@" (empty user info) is the
		// end of a password more likely than a URL of its own: split
		// there, "nats://app:0 x://@hq" would show "0 x://" whole.
		if k < j && k > 0 && !isSchemeByte(rest[k-1]) && !strings.HasPrefix(rest[j+3:], "@") &&
			wholeURL(rest[:k]) && !hasSecretParam(rest[:k]) {
			return k
		}
		off = j + 3
	}
}

// wholeURL says whether seg, the text after a "scheme://" up to the next
// one, holds a complete URL: its first word has user info, or is a
// host[:port] with an optional path or query. "app:my" (a password
// cut at a space, or at a "://" inside it) is not one.
func wholeURL(seg string) bool {
	if strings.Contains(seg, "@") {
		return true // user info, maybe with spaces in the password
	}
	seg = strings.TrimRight(seg, ", \t\"'(<=;")
	if w := strings.IndexAny(seg, " \t"); w >= 0 {
		seg = seg[:w]
	}
	auth := seg
	if p := strings.IndexAny(auth, "/?#"); p >= 0 {
		auth = auth[:p]
	}
	auth = strings.TrimRight(auth, ",;\"')>")
	host, port, ok := strings.Cut(auth, ":")
	if host == "" || strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-[]") != "" {
		return false
	}
	if ok && (port == "" || strings.Trim(port, "0123456789") != "") {
		return false
	}
	return true
}

// secretParam is a query parameter name whose value is a secret.
var secretParam = regexp.MustCompile(`(?i)^[a-z0-9_.-]*(pass|pwd|secret|token|key|auth|credential)[a-z0-9_.-]*$`)

// param is the start of a query parameter: "?name=" or "&name=".
var param = regexp.MustCompile(`[?&]([A-Za-z0-9_.-]+)=`)

// redactQuery hides the value of every secret query parameter of u (one
// URL, its user info already hidden): up to the next "&name=", or the
// end of u.
func redactQuery(u string) string {
	locs := param.FindAllStringSubmatchIndex(u, -1)
	if locs == nil {
		return u
	}
	var b strings.Builder
	last := 0
	for n, l := range locs {
		if l[0] < last || !secretParam.MatchString(u[l[2]:l[3]]) {
			continue
		}
		b.WriteString(u[last:l[1]])
		b.WriteString("xxxxx")
		last = len(u)
		for _, next := range locs[n+1:] {
			if u[next[0]] == '&' {
				last = next[0]
				break
			}
		}
	}
	b.WriteString(u[last:])
	return b.String()
}

func hasSecretParam(u string) bool { return firstSecretParam(u) < len(u) }

// firstSecretParam is where u's first secret query parameter starts, or
// len(u).
func firstSecretParam(u string) int {
	for _, l := range param.FindAllStringSubmatchIndex(u, -1) {
		if secretParam.MatchString(u[l[2]:l[3]]) {
			return l[0]
		}
	}
	return len(u)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

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
