package main

import (
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/internal/parseguard"
	"github.com/posedge/posedge/internal/secret"
)

// redactionNote is what MANIFEST.txt says about secrets.
const redactionNote = `Secrets are left out: every config field marked secret in posedge's config
struct (redis.password, redis.sentinel_password, terminals[].key_sha256) is
redacted, hq.nats_url keeps all but its user and password, and the value of
any key posedge does not know is redacted too. Files named by *_file keys
(admin token, NATS credentials, TLS keys) are never read.
`

// redactConfig returns the config without secrets. A file that parses is
// walked against config.Config and printed again (comments dropped); one
// that does not is redacted line by line by key name, a value kept only
// under a name the struct knows as plain, and anything below a key that
// starts a block scalar is dropped unless that key is plain.
func redactConfig(raw []byte) ([]byte, string) {
	var doc any
	// A panic inside the YAML library counts as "does not parse".
	if err := parseguard.Run("config", func() error {
		return yaml.UnmarshalWithOptions(raw, &doc, yaml.UseOrderedMap())
	}); err == nil {
		out, err := yaml.Marshal(secret.RedactDoc(doc, config.Config{}))
		if err == nil {
			return out, "secrets redacted, comments dropped"
		}
	}
	names := secret.Names(config.Config{})
	value := func(name, v string) string {
		switch k, known := names[name]; {
		case !known || k == secret.Hidden:
			return `"` + secret.Redacted + `"`
		case k == secret.URL:
			return secret.RedactURLs(v)
		}
		return v
	}
	var b strings.Builder
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := blockPair.FindStringSubmatch(l); m != nil && !strings.HasPrefix(strings.TrimSpace(m[3]), "{") &&
			!strings.HasPrefix(strings.TrimSpace(m[3]), "[") && strings.TrimSpace(m[3]) != "" && !blockScalar.MatchString(m[3]) {
			l = m[1] + m[2] + ": " + value(m[2], strings.TrimSpace(m[3]))
		} else {
			l = flowPair.ReplaceAllStringFunc(l, func(p string) string {
				sm := flowPair.FindStringSubmatch(p)
				return sm[1] + sm[2] + sm[3] + value(sm[2], sm[4])
			})
		}
		b.WriteString(l + "\n")
		// key: | or key: > — the value is on the lines indented below.
		if m := blockPair.FindStringSubmatch(lines[i]); m != nil && blockScalar.MatchString(m[3]) {
			if k, known := names[m[2]]; !known || k != secret.Plain {
				for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indent(lines[i+1]) > indent(lines[i])) {
					i++
				}
				b.WriteString(strings.Repeat(" ", indent(lines[i])+2) + secret.Redacted + "\n")
			}
		}
	}
	return []byte(b.String()), "not valid YAML: secrets redacted line by line"
}

var (
	// blockPair is `key: value` as a line of block style.
	blockPair = regexp.MustCompile(`^(\s*(?:-\s+)?)([A-Za-z0-9_]+)\s*:(?:\s+(.*))?$`)
	// blockScalar is the `|` or `>` that starts a block scalar.
	blockScalar = regexp.MustCompile(`^\s*[|>][-+0-9]*\s*(#.*)?$`)
	// flowPair is `key: value` inside a flow mapping `{…}`.
	flowPair = regexp.MustCompile(`([{,]\s*)([A-Za-z0-9_]+)(\s*:\s*)("(?:[^"\\]|\\.)*"|'[^']*'|[^\s,}#\[{][^,}#]*)`)
)

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " \t")) }
