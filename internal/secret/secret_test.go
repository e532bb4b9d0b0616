package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestRedactURLs(t *testing.T) {
	cases := []struct{ in, want string }{
		{"nats://hq.example:4222", "nats://hq.example:4222"},
		{"nats://app:pw@hq:4222", "nats://xxxxx@hq:4222"},
		{"nats://s3cr3ttoken@hq:4222", "nats://xxxxx@hq:4222"},
		{"tls://a:b@hq1:4222,tls://c:d@hq2:4222", "tls://xxxxx@hq1:4222,tls://xxxxx@hq2:4222"},
		{"tls://a:b@hq1:4222, tls://c:d@hq2:4222", "tls://xxxxx@hq1:4222, tls://xxxxx@hq2:4222"},
		{`connect to HQ at nats://u:p@10.0.0.1:4222: i/o timeout`, `connect to HQ at nats://xxxxx@10.0.0.1:4222: i/o timeout`},
		{"postgres://hq:secret@db:5432/hq?sslmode=require", "postgres://xxxxx@db:5432/hq?sslmode=require"},
		{"postgres://db:5432/hq?sslmode=require&password=secret", "postgres://db:5432/hq?sslmode=require&password=xxxxx"},
		// Issue 22 item 8's leaks: the part after a quote, a space in the
		// password, a secret parameter not named "password".
		{"postgres://db:5432/hq?password=it'sSecret", "postgres://db:5432/hq?password=xxxxx"},
		{"nats://app:my pass@hq:4222", "nats://xxxxx@hq:4222"},
		{"dial nats://app:my pass@hq:4222: refused", "dial nats://xxxxx@hq:4222: refused"},
		{"postgres://db/hq?sslmode=require&sslpassword=k3y&application_name=hq", "postgres://db/hq?sslmode=require&sslpassword=xxxxx&application_name=hq"},
		{"postgres://db/hq?password=p@ss&sslmode=require", "postgres://db/hq?password=xxxxx&sslmode=require"},
		{"nats://hq1:4222, nats://hq2:4222", "nats://hq1:4222, nats://hq2:4222"},
		// A password ending in "scheme://" (fuzz, CI stop 34): split
		// there, the first URL ("nats://0:0") looked whole and the
		// password "0 A000://" showed.
		{"connect to HQ at nats://0:0 A000://@hq.example:4222: i/o timeout", "connect to HQ at nats://xxxxx@hq.example:4222: i/o timeout"},
		{"tls://0:0 A000://@hq1:4222,tls://b:c@hq2:4222", "tls://xxxxx@hq1:4222,tls://xxxxx@hq2:4222"},
	}
	for _, tc := range cases {
		if got := RedactURLs(tc.in); got != tc.want {
			t.Errorf("RedactURLs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type schema struct {
	Name  string `yaml:"name"`
	Inner struct {
		Password string `yaml:"pw" secret:"true"`
		URL      string `yaml:"url" secret:"url"`
	} `yaml:"inner"`
	List []struct {
		ID  string `yaml:"id"`
		Key string `yaml:"key" secret:"true"`
	} `yaml:"list"`
	Map map[string]struct {
		N int `yaml:"n"`
	} `yaml:"map"`
}

// RedactDoc hides what the struct marks secret, whatever the key's name,
// and every key it does not know; plain values stay.
func TestRedactDoc(t *testing.T) {
	src := "name: shop\ninner: {pw: hunter2, url: \"nats://u:p@h:1\"}\nlist:\n  - {id: T1, key: abc123}\nmap: {x: {n: 3}}\npasword: typo-secret\ninner2: [deep-secret]\n"
	var doc any
	if err := yaml.UnmarshalWithOptions([]byte(src), &doc, yaml.UseOrderedMap()); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(RedactDoc(doc, schema{}))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, leak := range []string{"hunter2", "abc123", "typo-secret", "deep-secret", "u:p@"} {
		if strings.Contains(s, leak) {
			t.Errorf("%q shown:\n%s", leak, s)
		}
	}
	for _, keep := range []string{"name: shop", "id: T1", `"n": 3`, "nats://xxxxx@h:1"} {
		if !strings.Contains(s, keep) {
			t.Errorf("%q lost:\n%s", keep, s)
		}
	}
	if n := Names(schema{}); n["pw"] != Hidden || n["key"] != Hidden || n["url"] != URL || n["id"] != Plain {
		t.Errorf("Names = %v", n)
	}
}

// A YAML error keeps its position and message but never the source
// lines nor a quoted value.
func TestYAMLError(t *testing.T) {
	for _, src := range []string{
		"redis:\n  password: \"hunter2\"\n  addr: [x\n",
		"redis:\n  password: hunter2\n   bad: 1\n",
		"a: 1\nb: \"hunter2\"\na: 2\n",
	} {
		var v map[string]any
		err := yaml.Unmarshal([]byte(src), &v)
		if err == nil {
			t.Fatalf("%q parsed", src)
		}
		line, _, msg := YAMLError(err, []byte(src))
		if line == 0 || msg == "" || strings.Contains(msg, "hunter2") || strings.Contains(msg, "\n") {
			t.Errorf("YAMLError(%q) = %d %q (from %v)", src, line, msg, err)
		}
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	for body, ok := range map[string]bool{"": false, "  \n": false, "Zq9vW": false, strings.Repeat("a", 31): false,
		" " + strings.Repeat("a", 32) + "\n": true, strings.Repeat("a", 20) + " " + strings.Repeat("b", 20): false} {
		p := filepath.Join(dir, "tok")
		os.WriteFile(p, []byte(body), 0o600)
		tok, err := ReadToken(p)
		if ok != (err == nil) || (ok && tok != strings.TrimSpace(body)) {
			t.Errorf("ReadToken(%q) = %q, %v", body, tok, err)
		}
		if err != nil && strings.TrimSpace(body) != "" && strings.Contains(err.Error(), strings.TrimSpace(body)) {
			t.Errorf("error quotes the token: %v", err)
		}
		if !ok && strings.TrimSpace(body) != "" && len(strings.TrimSpace(body)) < MinTokenLen && !errors.Is(err, ErrWeakToken) {
			t.Errorf("short token: %v, want ErrWeakToken", err)
		}
	}
	if a, _ := NewToken(); len(a) < MinTokenLen {
		t.Errorf("NewToken %q too short", a)
	}
}
