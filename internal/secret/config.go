package secret

import (
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/posedge/posedge/internal/parseguard"
)

// RedactConfig returns a YAML config file without its secrets, judged
// against the config struct schema, and says how. A file that parses is
// walked against the struct (RedactDoc) and printed again, comments
// dropped; one that does not is redacted line by line (RedactLines).
func RedactConfig(raw []byte, schema any) ([]byte, string) {
	var doc any
	// A panic inside the YAML library counts as "does not parse".
	if err := parseguard.Run("config", func() error {
		return yaml.UnmarshalWithOptions(raw, &doc, yaml.UseOrderedMap())
	}); err == nil {
		out, err := yaml.Marshal(RedactDoc(doc, schema))
		if err == nil {
			return out, "secrets redacted, comments dropped"
		}
	}
	return RedactLines(raw, schema), "not valid YAML: secrets redacted line by line"
}

// RedactLines redacts YAML that does not parse, line by line by key
// name (Names): a value is kept only under a name the struct knows as
// plain. In block style the whole rest of the line after a secret key is
// the value; in flow style ({a: 1, password: …}) everything after a
// secret key to the end of the line is dropped, as a raw password may
// hold the ",", "}", quotes or "#" that would otherwise end it; anything
// below a key that starts a block scalar (| or >) is dropped unless that
// key is plain.
func RedactLines(raw []byte, schema any) []byte {
	names := Names(schema)
	kind := func(name string) Kind {
		k, known := names[name]
		if !known {
			return Hidden
		}
		return k
	}
	value := func(name, v string) string {
		switch kind(name) {
		case Hidden:
			return `"` + Redacted + `"`
		case URL:
			return RedactURLs(v)
		}
		return v
	}
	var b strings.Builder
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		m := blockPair.FindStringSubmatch(l)
		v := ""
		if m != nil {
			v = strings.TrimSpace(m[3])
		}
		switch {
		case m != nil && blockScalar.MatchString(v) && kind(m[2]) != Plain:
			// key: | or key: > — the value is on the lines indented below;
			// the indicator goes too (a raw password "|" reads as one).
			l = m[1] + m[2] + ": " + `"` + Redacted + `"`
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indent(lines[i+1]) > indent(lines[i])) {
				i++
			}
		case m != nil && v == "":
			l = m[1] + m[2] + ":" // a key opening a block; no trailing blanks kept
		case m != nil && !blockScalar.MatchString(v) && (kind(m[2]) != Plain || !strings.HasPrefix(v, "{") && !strings.HasPrefix(v, "[")):
			// A plain key's flow value is read below; any other value is
			// the whole rest of the line.
			l = m[1] + m[2] + ": " + value(m[2], v)
		default:
			l = redactFlow(l, kind, value)
		}
		b.WriteString(l + "\n")
	}
	return []byte(strings.TrimSuffix(b.String(), "\n"))
}

// redactFlow redacts the pairs of flow mappings on one line: plain
// values are kept; at the first other key the rest of the line is
// replaced by its redacted value.
func redactFlow(l string, kind func(string) Kind, value func(name, v string) string) string {
	var b strings.Builder
	last := 0
	for _, loc := range flowKey.FindAllStringSubmatchIndex(l, -1) {
		if loc[0] < last {
			continue
		}
		name := l[loc[2]:loc[3]]
		if kind(name) == Plain {
			continue
		}
		b.WriteString(l[last:loc[3]] + ": ")
		b.WriteString(value(name, strings.TrimSpace(l[loc[1]:])))
		return b.String()
	}
	return l
}

var (
	// blockPair is `key: value` as a line of block style.
	blockPair = regexp.MustCompile(`^(\s*(?:-\s+)?)([A-Za-z0-9_]+)\s*:(?:\s+(.*))?$`)
	// blockScalar is the `|` or `>` that starts a block scalar.
	blockScalar = regexp.MustCompile(`^\s*[|>][-+0-9]*\s*(#.*)?$`)
	// flowKey is the `key: ` of a pair inside a flow mapping `{…}`.
	flowKey = regexp.MustCompile(`[{,]\s*([A-Za-z0-9_]+)\s*:\s*`)
)

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " \t")) }
