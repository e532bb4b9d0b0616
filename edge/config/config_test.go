package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const minimal = `store_id: "S001"
listen: "127.0.0.1:18090"
admin: {listen: "127.0.0.1:18091"}
redis: {sentinels: ["127.0.0.1:26379"], master_name: "posedge"}
journal: {path: "/tmp/j.db"}
hq: {nats_url: "nats://127.0.0.1:4222"}
terminals:
  - {id: "T01", key_sha256: "` + "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f" + `"}
`

func TestParseMinimalGetsContractDefaults(t *testing.T) {
	c, err := Parse([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.Actions["pay"].Limit != 5 || c.Limits.Actions["pay"].Window.D() != 2*time.Second {
		t.Errorf("pay default %+v", c.Limits.Actions["pay"])
	}
	if *c.Redis.MinReplicasAck != 1 || c.HQ.BatchSize != 500 || c.HQ.SubjectPrefix != "pos.txn" || c.Timezone != "UTC" {
		t.Errorf("defaults not applied: %+v", c)
	}
	if c.MaxSaleCents != 100_000_000_000 {
		t.Errorf("max_sale_cents default %d", c.MaxSaleCents)
	}
	if c.HQ.BacklogCritAge.D() != time.Hour || c.Journal.WarnFreeBytes != 1<<30 || c.HQ.ConfirmAfter.D() != 30*time.Second {
		t.Errorf("defaults not applied: %+v", c)
	}
}

func TestParseOverridesOneActionKeepsOthers(t *testing.T) {
	c, err := Parse([]byte(minimal + "limits:\n  actions:\n    scan: {limit: 7, window: \"3s\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.Actions["scan"].Limit != 7 || c.Limits.Actions["refund"].Limit != 3 {
		t.Errorf("actions %+v", c.Limits.Actions)
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name  string
		extra string
		keys  []string // every key that must be named
	}{
		{"unknown key", "colour: blue\n", []string{"colour"}},
		{"unknown nested key", "hq: {nats_url: \"nats://x:1\", bogus: 1}\n", []string{`unknown field "bogus"`}},
		{"bad duration", "hq: {nats_url: \"nats://x:1\", backlog_crit_age: \"soon\"}\n", []string{"hq.backlog_crit_age: not a duration"}},
		{"unknown action and bad limit", "limits:\n  actions:\n    dance: {limit: 1, window: \"1s\"}\n    pay: {limit: 0, window: \"1s\"}\n", []string{"limits.actions.dance", "limits.actions.pay.limit"}},
		{"fraction", "limits: {fallback_fraction: 1.5}\n", []string{"limits.fallback_fraction"}},
		{"fraction not a number", "limits: {fallback_fraction: .nan}\n", []string{"limits.fallback_fraction"}},
		{"node id and tz", "node_id: 12\ntimezone: \"Mars/Olympus\"\n", []string{"node_id", "timezone"}},
		{"tls half", "tls: {cert_file: \"/a\"}\n", []string{"tls"}},
		{"admin tls half", "admin: {listen: \"127.0.0.1:8081\", tls: {key_file: \"/a\"}}\n", []string{"admin.tls:"}},
		{"admin not loopback", "admin: {listen: \"0.0.0.0:8081\"}\n", []string{"admin.token_file"}},
		{"min ack", "redis: {sentinels: [\"127.0.0.1:1\"], replicas: 1, min_replicas_ack: 2}\n", []string{"redis.min_replicas_ack"}},
		{"retention", "journal: {path: \"/x\", retention: \"1h\"}\n", []string{"journal.retention"}},
		{"confirm_after too short", "hq: {nats_url: \"nats://x:1\", confirm_after: \"100ms\"}\n", []string{"hq.confirm_after: must be 1s-2m"}},
		{"confirm_after too long", "hq: {nats_url: \"nats://x:1\", confirm_after: \"5m\"}\n", []string{"hq.confirm_after: must be 1s-2m"}},
		{"max sale zero", "max_sale_cents: 0\n", []string{"max_sale_cents: must be 1-1000000000000000"}},
		{"max sale negative", "max_sale_cents: -5\n", []string{"max_sale_cents: must be"}},
		{"max sale above the bound", "max_sale_cents: 1000000000000001\n", []string{"max_sale_cents: must be"}},
		// Issue 22 finding 9: the newline reached the unit posedge install writes.
		{"newline in journal.path", "journal: {path: \"/var/lib/posedge/j.db\\nExecStartPre=/bin/sh -c id\"}\n", []string{"journal.path: must not contain control characters"}},
		{"control character in a password", "redis: {sentinels: [\"127.0.0.1:1\"], master_name: \"posedge\", password: \"a\\x01b\"}\n", []string{"redis.password: must not contain control characters"}},
		{"newline in a terminal id", "terminals:\n  - {id: \"T01\\n\", key_sha256: \"0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f\"}\n", []string{"terminals[0].id: must not contain control characters"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(withSection(minimal, tc.extra)))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, k := range tc.keys {
				if !strings.Contains(err.Error(), k) {
					t.Errorf("error does not name %q:\n%v", k, err)
				}
			}
		})
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	_, err := Parse([]byte(`store_id: "bad id!"
terminals:
  - {id: "T:01", key_sha256: "zz"}
  - {id: "T:01", key_sha256: "zz"}
`))
	var ve ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want ValidationError, got %v", err)
	}
	for _, k := range []string{"store_id", "redis.sentinels", "hq.nats_url", "terminals[0].id", "terminals[0].key_sha256", "terminals[1].id"} {
		if !strings.Contains(err.Error(), k+":") {
			t.Errorf("missing %s in:\n%v", k, err)
		}
	}
}

func TestLoadTellsMissingFromBad(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(filepath.Join(dir, "nope.yaml"))
	if !errors.Is(err, ErrNoConfig) {
		t.Fatalf("missing file: %v", err)
	}
	p := filepath.Join(dir, "bad.yaml")
	os.WriteFile(p, []byte("store_id: [\n"), 0o644)
	_, err = Load(p)
	if err == nil || errors.Is(err, ErrNoConfig) || !strings.Contains(err.Error(), p) {
		t.Fatalf("bad file: %v", err)
	}
}

// withSection appends extra to base, dropping base's top-level sections
// that extra redefines (YAML rejects a key defined twice).
func withSection(base, extra string) string {
	redefined := map[string]bool{}
	for _, l := range strings.Split(extra, "\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") {
			redefined[k] = true
		}
	}
	var out []string
	skipping := false
	for _, l := range strings.Split(base, "\n") {
		if !strings.HasPrefix(l, " ") {
			k, _, _ := strings.Cut(l, ":")
			skipping = redefined[k]
		}
		if !skipping {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + extra
}

func TestHQNATSURL(t *testing.T) {
	cases := []struct {
		name string
		url  string
		want []string // substrings of the error; none = accepted
	}{
		{"one server", "nats://hq.example:4222", nil},
		{"cluster", "nats://hq1:4222, nats://hq2:4222, tls://hq3:4222", nil},
		{"credentials", "nats://posedge:s3cret@hq1:4222,nats://posedge:s3cret@hq2:4222", nil},
		{"bad scheme", "http://hq:4222", []string{"hq.nats_url", "unsupported scheme"}},
		{"bad server in a cluster, password hidden", "nats://hq1:4222,http://posedge:hunter2@hq2:4222",
			[]string{"hq.nats_url", "server 2 of 2", "xxxxx@hq2:4222"}},
		{"only commas", ",", []string{"hq.nats_url", "required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(withSection(minimal, "hq: {nats_url: \""+tc.url+"\"}\n")))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				if c.HQ.NATSURL != tc.url {
					t.Errorf("hq.nats_url = %q, want %q", c.HQ.NATSURL, tc.url)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error prints the password:\n%v", err)
			}
		})
	}
}

// An admin token file that is missing, empty, blank or short is refused
// naming admin.token_file, on loopback too, and its content is never
// quoted; a long token is accepted; no file is refused off loopback only.
func TestAdminTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	long := "Zq7-" + strings.Repeat("k", 28) // exactly 32
	cases := []struct {
		name, listen, file string
		ok                 bool
	}{
		{"empty file on LAN", "0.0.0.0:8081", write("empty", ""), false},
		{"blank file on LAN", "0.0.0.0:8081", write("blank", " \n\t\n"), false},
		{"6 characters on LAN", "0.0.0.0:8081", write("six", "s3cr3t\n"), false},
		{"31 characters on LAN", "0.0.0.0:8081", write("short", " "+long[:31]+"\n"), false},
		{"two words", "0.0.0.0:8081", write("words", long+" "+long), false},
		{"missing file", "0.0.0.0:8081", filepath.Join(dir, "nope"), false},
		{"short file on loopback", "127.0.0.1:8081", write("six2", "s3cr3t"), false},
		{"32 characters on LAN", "0.0.0.0:8081", write("ok", "\n "+long+" \n"), true},
		{"no file on loopback", "127.0.0.1:8081", "", true},
		{"no file on LAN", "0.0.0.0:8081", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			extra := "admin: {listen: \"" + tc.listen + "\"}\n"
			if tc.file != "" {
				extra = "admin: {listen: \"" + tc.listen + "\", token_file: \"" + tc.file + "\"}\n"
			}
			p := write("posedge.yaml", withSection(minimal, extra))
			c, err := Load(p)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if tok, err := c.AdminToken(); err != nil || (tc.file != "" && tok != long) {
					t.Errorf("AdminToken %q, %v", tok, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "admin.token_file:") {
				t.Fatalf("not refused naming admin.token_file: %v", err)
			}
			for _, leak := range []string{"s3cr3t", long[:31]} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error quotes the token: %v", err)
				}
			}
		})
	}
}

// check-config and status name each link left in plaintext off loopback
// (issue 22 finding 9: neither did), never the NATS password.
func TestPlaintextWarnings(t *testing.T) {
	cases := []struct {
		name  string
		extra string
		want  []string // substrings, one per warning, in order
	}{
		{"all on loopback", "", nil},
		{"terminal listener on the LAN", "listen: \"0.0.0.0:8090\"\n", []string{"listen 0.0.0.0:8090 is off loopback without tls"}},
		{"terminal listener with tls", "listen: \"0.0.0.0:8090\"\ntls: {cert_file: \"/c\", key_file: \"/k\"}\n", nil},
		{"plaintext NATS to HQ", "hq: {nats_url: \"nats://s001:hunter2@hq.example:4222\"}\n", []string{"hq.example:4222 is plaintext nats://"}},
		{"NATS over tls://", "hq: {nats_url: \"tls://s001:hunter2@hq.example:4222\"}\n", nil},
		{"NATS with a CA", "hq: {nats_url: \"nats://hq.example:4222\", ca_file: \"/ca.pem\"}\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(withSection(minimal, tc.extra)))
			if err != nil {
				t.Fatal(err)
			}
			got := c.PlaintextWarnings()
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) || strings.Contains(got[i], "hunter2") {
					t.Errorf("warning %q, want it to contain %q and no password", got[i], w)
				}
			}
		})
	}
}
