package hq_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hq"
)

func TestLoadConfigDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hq.yaml")
	os.WriteFile(path, []byte("nats_url: \"nats://127.0.0.1:4222\"\n"), 0o644)
	c, err := hq.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	want := hq.DefaultConfig()
	want.NATSURL = "nats://127.0.0.1:4222"
	if c != want {
		t.Fatalf("config = %+v\nwant %+v", c, want)
	}
	if c.Stream != "POS_TXN" || c.SubjectPrefix != "pos.txn" || c.DuplicateWindow != 2*time.Minute ||
		c.Database != "sqlite:///var/lib/posedge-hq/hq.db" || c.AdminListen != "127.0.0.1:8090" ||
		c.BatchSize != 256 || c.SilentAfter != 5*time.Minute || c.AckWait != 30*time.Second || c.MaxSaleCents != 100_000_000_000 ||
		c.StreamReplicas != 1 {
		t.Fatalf("defaults = %+v", c)
	}
}

func TestLoadConfigFull(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"hq.creds", "ca.pem", "cert.pem", "key.pem"} {
		os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600)
	}
	os.WriteFile(filepath.Join(dir, "admin.token"), []byte(strings.Repeat("t", 40)+"\n"), 0o600)
	path := filepath.Join(dir, "hq.yaml")
	os.WriteFile(path, []byte(`
nats_url: "tls://hq1.example:4222,tls://hq2.example:4222"
creds_file: "`+dir+`/hq.creds"
tls: {ca_file: "`+dir+`/ca.pem", cert_file: "`+dir+`/cert.pem", key_file: "`+dir+`/key.pem"}
stream: "POS_TXN_EU"
subject_prefix: "eu.pos.txn"
duplicate_window: "10m"
stream_replicas: 3
database: "postgres://hq:secret@db.example:5432/hq?sslmode=verify-full"
admin: {listen: "0.0.0.0:9000", token_file: "`+dir+`/admin.token", tls: {cert_file: "`+dir+`/cert.pem", key_file: "`+dir+`/key.pem"}}
batch_size: 500
silent_after: "15m"
ack_wait: "45s"
max_sale_cents: 1000000000000000
gc_percent: 800
`), 0o644)
	c, err := hq.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.GCPercent != 800 {
		t.Fatalf("gc_percent = %d, want 800", c.GCPercent)
	}
	if c.MaxSaleCents != 1_000_000_000_000_000 {
		t.Fatalf("max_sale_cents = %d, want the largest allowed", c.MaxSaleCents)
	}
	if c.TLS.CertFile != dir+"/cert.pem" || c.Stream != "POS_TXN_EU" || c.SubjectPrefix != "eu.pos.txn" ||
		c.DuplicateWindow != 10*time.Minute || c.StreamReplicas != 3 || c.AdminListen != "0.0.0.0:9000" || c.BatchSize != 500 ||
		c.SilentAfter != 15*time.Minute || c.AckWait != 45*time.Second || !strings.HasPrefix(c.Database, "postgres://") ||
		c.AdminTokenFile != dir+"/admin.token" || c.AdminTLS.KeyFile != dir+"/key.pem" {
		t.Fatalf("config = %+v", c)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	const base = "nats_url: \"nats://127.0.0.1:4222\"\n"
	tests := []struct {
		name string
		yaml string
		want []string // each must appear in the error
	}{
		{"unknown key", base + "natsurl: x\n", []string{"line 2, column 1 (key natsurl)", `unknown field "natsurl"`}},
		{"unknown nested key", base + "admin:\n  listen: \"127.0.0.1:1\"\n  token: x\n", []string{"line 4, column 3 (key token)", `unknown field "token"`}},
		{"bad duration", base + "duplicate_window: \"2 minutes\"\n", []string{"duplicate_window", `"2 minutes"`, "not a duration"}},
		{"negative duration", base + "silent_after: \"-5m\"\n", []string{"silent_after", "at least"}},
		{"bad database scheme", base + "database: \"mysql://x/y\"\n", []string{"database", "must start with sqlite://"}},
		{"sqlite without a file", base + "database: \"sqlite://\"\n", []string{"database", "names no file"}},
		{"sqlite with a query", base + "database: \"sqlite:///x.db?mode=ro\"\n", []string{"database", "no query"}},
		{"bad postgres URL", base + "database: \"postgres://hq:pw@db:notaport/hq\"\n", []string{"database", "not a valid PostgreSQL URL"}},
		{"postgres password not printed", base + "database: \"postgres://hq:hunter2@db:x/hq\"\n", []string{"database", "xxxxx"}},
		{"missing nats_url", "stream: POS\n", []string{"nats_url", "required"}},
		{"bad nats_url", "nats_url: \"http://x:1\"\n", []string{"nats_url", "unsupported scheme"}},
		{"nats credentials not printed", "nats_url: \"http://u:hunter2@x:1\"\n", []string{"nats_url", "xxxxx@x:1"}},
		{"bad server in a cluster", "nats_url: \"nats://a:4222,nats://u:hunter2@b:4222/x\"\n", []string{"nats_url", "server 2 of 2", "xxxxx@b:4222"}},
		{"empty cluster list", "nats_url: \" , \"\n", []string{"nats_url", "required"}},
		{"stream replicas even", base + "stream_replicas: 2\n", []string{"stream_replicas", `"2"`, "1, 3 or 5"}},
		{"stream replicas not a number", base + "stream_replicas: three\n", []string{"stream_replicas", "not a whole number"}},
		{"stream max age under the duplicate window", base + "stream_max_age: \"1m\"\n", []string{"stream_max_age", "at least duplicate_window"}},
		{"stream max bytes tiny", base + "stream_max_bytes: 1000\n", []string{"stream_max_bytes", "at least 1048576"}},
		{"stream max msgs per subject not a number", base + "stream_max_msgs_per_subject: many\n", []string{"stream_max_msgs_per_subject", "not a whole number"}},
		{"batch size", base + "batch_size: 0\n", []string{"batch_size", "between 1 and"}},
		{"batch size not a number", base + "batch_size: lots\n", []string{"batch_size", "not a whole number"}},
		{"stream name", base + "stream: \"POS.TXN\"\n", []string{"stream", "[A-Za-z0-9_-]"}},
		{"wildcard prefix", base + "subject_prefix: \"pos.*\"\n", []string{"subject_prefix", "no wildcards"}},
		{"prefix over the have subjects", base + "subject_prefix: \"posedge.hq\"\n", []string{"subject_prefix", "posedge.hq.have"}},
		{"admin listen", base + "admin: {listen: \"8090\"}\n", []string{"admin.listen", "host:port"}},
		{"creds missing", base + "creds_file: /nonexistent/hq.creds\n", []string{"creds_file", "cannot read"}},
		{"cert without key", base + "tls: {cert_file: /etc/hostname}\n", []string{"tls", "both or neither"}},
		{"max sale zero", base + "max_sale_cents: 0\n", []string{"max_sale_cents", "between 1 and 1000000000000000"}},
		{"max sale above the bound", base + "max_sale_cents: 1000000000000001\n", []string{"max_sale_cents", "between 1 and"}},
		{"max sale not a number", base + "max_sale_cents: 1e9\n", []string{"max_sale_cents", "not a whole number"}},
		{"gc percent off", base + "gc_percent: off\n", []string{"gc_percent", "not a whole number"}},
		{"gc percent below collecting at all", base + "gc_percent: 10\n", []string{"gc_percent", "between 25 and 10000"}},
		{"gc percent above the bound", base + "gc_percent: 20000\n", []string{"gc_percent", "between 25 and 10000"}},
		// Issue 22 finding 9, as posedge's check-config: a control
		// character in any value, named by key, the value not quoted.
		{"newline in the database path", base + "database: \"sqlite:///tmp/hq\\nExecStartPre=/bin/sh.db\"\n",
			[]string{"database", "must not contain control characters (found one at byte 16)"}},
		{"escape in a file name", base + "admin: {listen: \"127.0.0.1:8090\", token_file: \"/tmp/t\\e[2J\"}\n",
			[]string{"admin.token_file", "control characters"}},
		{"control character in the NATS password", "nats_url: \"nats://u:hunter2\\a@x:4222\"\n", []string{"nats_url", "control characters"}},
		{"tab inside the catalog bucket", base + "catalog_bucket: \"POS\\tCAT\"\n", []string{"catalog_bucket", "control characters"}},
		{"wrong type", base + "admin: 3\n", []string{"line 2, column 8"}},
		{"syntax", "nats_url: [\n", []string{"parse: line 1,"}},
		{"every problem at once", "duplicate_window: x\nbatch_size: -1\ndatabase: \"x\"\n",
			[]string{"nats_url", "duplicate_window", "batch_size", "database"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hq.yaml")
			os.WriteFile(path, []byte(tc.yaml), 0o644)
			_, err := hq.LoadConfig(path)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error does not name the file: %s", msg)
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("error prints the password: %s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
			var ve hq.ValidationError
			if !strings.Contains(msg, "parse: ") && !errors.As(err, &ve) {
				t.Errorf("error is neither a syntax error nor a ValidationError: %T", err)
			}
		})
	}
}

func TestLoadConfigMissing(t *testing.T) {
	_, err := hq.LoadConfig(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, hq.ErrNoConfig) {
		t.Fatalf("err = %v, want ErrNoConfig", err)
	}
}

func TestParseDatabaseURL(t *testing.T) {
	tests := []struct {
		in   string
		kind hq.DatabaseKind
		path string
	}{
		{"sqlite:///var/lib/posedge-hq/hq.db", hq.SQLite, "/var/lib/posedge-hq/hq.db"},
		{"sqlite:///tmp/x/hq.db", hq.SQLite, "/tmp/x/hq.db"},
		{"sqlite://data/hq.db", hq.SQLite, "data/hq.db"},
		{"postgres://hq@db:5432/hq", hq.Postgres, ""},
		{"postgresql://hq@db/hq?sslmode=disable", hq.Postgres, ""},
	}
	for _, tc := range tests {
		u, err := hq.ParseDatabaseURL(tc.in)
		if err != nil || u.Kind != tc.kind || u.Path != tc.path {
			t.Errorf("ParseDatabaseURL(%q) = %+v, %v", tc.in, u, err)
		}
	}
}

// The admin token follows posedge's rule: a token file that is missing,
// empty, blank or shorter than 32 characters is refused naming
// admin.token_file, its content never quoted; no file is refused off
// loopback only. Half a TLS pair is refused too.
func TestAdminTokenAndTLS(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	long := strings.Repeat("Q", 32)
	cert := write("cert.pem", "x")
	cases := []struct {
		name, admin string
		wantKey     string // "" = accepted
	}{
		{"empty on LAN", `{listen: "0.0.0.0:9000", token_file: "` + write("empty", "") + `"}`, "admin.token_file"},
		{"blank on LAN", `{listen: "0.0.0.0:9000", token_file: "` + write("blank", "  \n") + `"}`, "admin.token_file"},
		{"6 characters on LAN", `{listen: "0.0.0.0:9000", token_file: "` + write("six", "s3cr3t") + `"}`, "admin.token_file"},
		{"short on loopback", `{listen: "127.0.0.1:9000", token_file: "` + write("six2", "s3cr3t") + `"}`, "admin.token_file"},
		{"none on LAN", `{listen: "0.0.0.0:9000"}`, "admin.token_file"},
		{"none on loopback", `{listen: "127.0.0.1:9000"}`, ""},
		{"long on LAN", `{listen: "0.0.0.0:9000", token_file: "` + write("long", long+"\n") + `"}`, ""},
		{"half TLS", `{listen: "127.0.0.1:9000", tls: {cert_file: "` + cert + `"}}`, "admin.tls"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hq.ParseConfig("hq.yaml", []byte("nats_url: \"nats://127.0.0.1:4222\"\nadmin: "+tc.admin+"\n"))
			if tc.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantKey+":") {
				t.Fatalf("not refused naming %s: %v", tc.wantKey, err)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error quotes the token: %v", err)
			}
		})
	}
}

// TestYAMLLibraryPanicIsANamedError: the input on which goccy/go-yaml
// v1.19.2 dereferences nil is an error naming the file and line, never a
// crash of posedge-hq.
func TestYAMLLibraryPanicIsANamedError(t *testing.T) {
	// hq.yaml has no list field: the same shape under a mapping field.
	_, err := hq.ParseConfig("hq.yaml", []byte("nats_url: \"nats://127.0.0.1:4222\"\ntls:\n !\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "hq.yaml:") {
		t.Fatalf("err = %v, want one starting with hq.yaml:", err)
	}
}
