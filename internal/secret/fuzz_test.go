package secret

import (
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

var (
	fuzzHost = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,30}$`)
	fuzzUser = regexp.MustCompile(`^[A-Za-z0-9._-]{0,20}$`)
)

// usable says whether a fuzzed password can be looked for in an output:
// not empty, no control character (every config value refuses them, so
// none reaches a URL or a YAML value), valid UTF-8, and not already part
// of the text around it or of what replaces it.
func usable(pw string, around ...string) bool {
	if pw == "" || strings.IndexFunc(pw, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\uFFFD' }) >= 0 {
		return false
	}
	for _, s := range append(around, Redacted, "xxxxx") {
		if strings.Contains(s, pw) {
			return false
		}
	}
	return true
}

// masked is a redacted text with its replacements as NUL bytes, which no
// usable password holds: the password is looked for in what is left, not
// in a replacement next to a quote or a colon.
func masked(out string) string {
	return strings.NewReplacer(`"`+Redacted+`"`, "\x00", Redacted, "\x00", "xxxxx", "\x00").Replace(out)
}

// FuzzRedactURLs: whatever a password holds (raw or percent-encoded,
// spaces, quotes, "@", "&", "?"), in the user info of a URL inside a
// message, of a URL in a list, or as the value of a query parameter named
// like a secret, it never appears in the redacted text; and what is not
// secret — scheme, host, port, the words around, the other parameters —
// is kept exactly (a password holding "scheme://" can read as a list of
// two URLs: then only the first holds).
func FuzzRedactURLs(f *testing.F) {
	for _, pw := range []string{"pw", "it's", "p@ss", "a:b/c%d", "x@y@z", `q"u'o`, "%40", "a,b", "?password=x",
		"my pass", "it'sSecret", "a@b c", "1,b://y", "x&sslmode=disable", "a nats://x", "p w@h:1"} {
		f.Add("app", pw, "hq.example")
	}
	f.Fuzz(func(t *testing.T, user, pw, host string) {
		if !fuzzHost.MatchString(host) || !fuzzUser.MatchString(user) {
			return
		}
		// Two readings no parser can tell apart are left out of a
		// position: a password holding "?name=" or "&name=" (a query
		// parameter of its own) in a query value, or as user info a
		// secret one; a password holding "scheme://" may read as a list
		// of two URLs (its part before may show, never the whole).
		nextParam := regexp.MustCompile(`[?&][A-Za-z0-9_.-]+=`).MatchString(pw)
		list := strings.Contains(pw, "://")
		type pos struct {
			in, want string
			skip     bool
		}
		var cases []pos
		for _, raw := range []string{pw, url.QueryEscape(pw)} {
			cases = append(cases,
				pos{"connect to HQ at nats://" + user + ":" + raw + "@" + host + ":4222: i/o timeout",
					"connect to HQ at nats://xxxxx@" + host + ":4222: i/o timeout", nextParam},
				pos{"tls://" + user + ":" + raw + "@" + host + ":4222,tls://b:c@hq2:4222",
					"tls://xxxxx@" + host + ":4222,tls://xxxxx@hq2:4222", nextParam},
				pos{"open postgres://" + host + ":5432/hq?sslmode=require&password=" + raw + "\nnext line",
					"open postgres://" + host + ":5432/hq?sslmode=require&password=xxxxx\nnext line", nextParam},
				pos{"postgres://" + host + "/hq?sslpassword=" + raw + "&sslmode=require",
					"postgres://" + host + "/hq?sslpassword=xxxxx&sslmode=require", nextParam})
		}
		for _, c := range cases {
			if c.skip {
				continue
			}
			if !usable(pw, c.want) {
				return
			}
			got := RedactURLs(c.in)
			if strings.Contains(masked(got), pw) {
				t.Fatalf("RedactURLs(%q) = %q: the password shows", c.in, got)
			}
			if got != c.want && !list {
				t.Fatalf("RedactURLs(%q) = %q, want %q", c.in, got, c.want)
			}
		}
	})
}

// Every printable character in a password, the ones of finding 22.8
// first: none lets any of it through, and the host stays.
func TestRedactURLsEveryCharacter(t *testing.T) {
	for c := byte(0x20); c < 0x7f; c++ {
		pw := "Sec" + string(c) + "ret'@x"
		for _, form := range []string{
			"nats://app:" + pw + "@hq:4222",
			"postgres://hq:" + pw + "@db:5432/hq?sslmode=require",
			"tls://a:" + pw + "@hq1:4222,tls://c:" + pw + "@hq2:4222",
			`dial "nats://app:` + pw + `@hq:4222": refused`,
			"postgres://db:5432/hq?password=" + pw,
		} {
			got := RedactURLs(form)
			if strings.Contains(got, "Sec") || strings.Contains(got, "ret'") {
				t.Errorf("RedactURLs(%q) = %q: the password shows", form, got)
			}
			if !strings.Contains(got, "@hq") && !strings.Contains(got, "@db:5432/hq") && !strings.Contains(got, "db:5432/hq?password=xxxxx") {
				t.Errorf("RedactURLs(%q) = %q: the host is lost", form, got)
			}
		}
	}
}

// fuzzSchema is a config struct with one field of each kind.
type fuzzSchema struct {
	Name  string `yaml:"name"`
	Redis struct {
		Addr     string `yaml:"addr"`
		Password string `yaml:"password" secret:"true"`
	} `yaml:"redis"`
	HQ struct {
		NATSURL string `yaml:"nats_url" secret:"url"`
	} `yaml:"hq"`
	Terminals []struct {
		ID  string `yaml:"id"`
		Key string `yaml:"key_sha256" secret:"true"`
	} `yaml:"terminals"`
}

// yamlPositions are the places a secret goes in a config file: a secret
// field, a URL's user info, a secret field of a list item, a key the
// struct does not know; in block style, quoted either way, and in flow
// style. Each keeps the plain line "name: shop" and "addr: redis1".
func yamlPositions(pw string) []string {
	dq, _ := yaml.Marshal(pw) // the library's own quoting, as an operator's editor would
	q := strings.TrimSuffix(string(dq), "\n")
	sq := "'" + strings.ReplaceAll(pw, "'", "''") + "'"
	return []string{
		"name: shop\nredis:\n  addr: redis1\n  password: " + pw + "\n",
		"name: shop\nredis:\n  addr: redis1\n  password: " + q + "\n",
		"name: shop\nredis:\n  addr: redis1\n  password: " + sq + "\n",
		"name: shop\nredis: {addr: redis1, password: " + pw + "}\n",
		"name: shop\nredis: {addr: redis1, password: " + sq + "}\n",
		"name: shop\nredis:\n  addr: redis1\nhq:\n  nats_url: nats://app:" + pw + "@hq:4222\n",
		"name: shop\nredis:\n  addr: redis1\nterminals:\n  - {id: T01, key_sha256: " + sq + "}\n",
		"name: shop\nredis:\n  addr: redis1\n  pasword: " + pw + "\n",
		"name: shop\nredis:\n  addr: redis1\n  password: |\n    " + pw + "\n",
	}
}

// FuzzRedactConfig: a password of any characters, in any of
// yamlPositions, never shows in a support bundle's config — parsed
// (RedactDoc) or, when the file does not parse, line by line
// (RedactLines, run on every input too) — and the plain values stay.
func FuzzRedactConfig(f *testing.F) {
	for _, pw := range []string{"hunter2", "it's", `q"u'o`, "a, b}", "#x", "[abc", "{x: y}", "|", "a: b", "x' #", "p w@h:1", "*a", "&a !b"} {
		f.Add(pw)
	}
	f.Fuzz(func(t *testing.T, pw string) {
		for _, doc := range yamlPositions(pw) {
			if !usable(pw, strings.Replace(doc, pw, "", 1), "REDACTED", `"REDACTED"`) {
				return
			}
			outs := map[string]string{"line by line": string(RedactLines([]byte(doc), fuzzSchema{}))}
			// Parsed, the password is what YAML reads: placed raw, `""`,
			// `~` or `*a` is not the characters written.
			if reads(pw) {
				outs["parsed"] = parsed(doc)
			}
			for how, out := range outs {
				if out == "" {
					continue // did not parse
				}
				if strings.Contains(masked(out), pw) {
					t.Fatalf("%s: %q redacted to %q: the password shows", how, doc, out)
				}
				if !strings.Contains(out, "name: shop") || !strings.Contains(out, "redis1") {
					t.Fatalf("%s: %q redacted to %q: a plain value is lost", how, doc, out)
				}
			}
		}
	})
}

// reads says whether YAML reads pw, written raw as a value, as pw.
func reads(pw string) bool {
	var v map[string]any
	if err := yaml.Unmarshal([]byte("k: "+pw), &v); err != nil {
		return true // no parse: the line-by-line path, checked anyway
	}
	s, ok := v["k"].(string)
	return ok && s == pw
}

// parsed is RedactConfig's output for a doc that parses, or "".
func parsed(doc string) string {
	out, how := RedactConfig([]byte(doc), fuzzSchema{})
	if !strings.HasPrefix(how, "secrets redacted") {
		return ""
	}
	return string(out)
}
