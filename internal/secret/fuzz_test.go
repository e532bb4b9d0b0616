package secret

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var fuzzHost = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,30}$`)

// FuzzRedactURLs: whatever characters a password holds (raw or
// percent-encoded), it never appears in the redacted text, and what is
// not secret — scheme, host, port, the words around — is kept exactly.
func FuzzRedactURLs(f *testing.F) {
	for _, pw := range []string{"pw", "it's", "p@ss", "a:b/c%d", "x@y@z", `q"u'o`, "%40", "a,b", "?password=x"} {
		f.Add("app", pw, "hq.example")
	}
	f.Fuzz(func(t *testing.T, user, pw, host string) {
		if !fuzzHost.MatchString(host) || strings.ContainsAny(user+pw, " \t\r\n") || strings.Contains(","+user+":"+pw, "://") || pw == "" {
			return
		}
		for _, raw := range []string{pw, url.QueryEscape(pw)} {
			in := "connect to HQ at nats://" + user + ":" + raw + "@" + host + ":4222: i/o timeout"
			want := "connect to HQ at nats://xxxxx@" + host + ":4222: i/o timeout"
			got := RedactURLs(in)
			if got != want {
				t.Fatalf("RedactURLs(%q) = %q, want %q", in, got, want)
			}
		}
	})
}

// Every printable character in a password, the ones of finding 22.8
// first: none lets any of it through, and the host stays.
func TestRedactURLsEveryCharacter(t *testing.T) {
	for c := byte(0x21); c < 0x7f; c++ {
		pw := "Sec" + string(c) + "ret'@x"
		for _, form := range []string{
			"nats://app:" + pw + "@hq:4222",
			"postgres://hq:" + pw + "@db:5432/hq?sslmode=require",
			"tls://a:" + pw + "@hq1:4222,tls://c:" + pw + "@hq2:4222",
			`dial "nats://app:` + pw + `@hq:4222": refused`,
		} {
			got := RedactURLs(form)
			if strings.Contains(got, "Sec") || strings.Contains(got, "ret'") {
				t.Errorf("RedactURLs(%q) = %q: the password shows", form, got)
			}
			if !strings.Contains(got, "@hq") && !strings.Contains(got, "@db:5432/hq") {
				t.Errorf("RedactURLs(%q) = %q: the host is lost", form, got)
			}
		}
	}
}
