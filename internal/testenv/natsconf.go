package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StartNATSWithConfig starts a NATS server like StartNATS with conf, the
// text of a nats-server config file (accounts, users, permissions), on
// top; the listen address and JetStream store are set here.
func StartNATSWithConfig(t testing.TB, conf string) *NATS {
	t.Helper()
	dir := t.TempDir()
	n := &NATS{t: t, Dir: filepath.Join(dir, "jetstream"), conf: filepath.Join(dir, "nats.conf")}
	if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		n.Port = FreePort(t)
		if err = n.start(); err == nil {
			return n
		}
	}
	t.Fatalf("nats server: %v", err)
	return nil
}

// DocumentedPassword is the password SecurityTemplate gives every user.
const DocumentedPassword = "pw"

// SecurityTemplate returns the NATS account template of docs/security.md
// (the first fenced block after "## Per-store NATS permissions" in the
// file at path) with every "…" password replaced by DocumentedPassword,
// so tests run the documented text itself rather than a copy of it.
func SecurityTemplate(t testing.TB, path string) string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the documented template: %v", err)
	}
	s := string(doc)
	i := strings.Index(s, "## Per-store NATS permissions")
	if i < 0 {
		t.Fatalf("%s: no \"## Per-store NATS permissions\" section", path)
	}
	s = s[i:]
	open := strings.Index(s, "```\n")
	if open < 0 {
		t.Fatalf("%s: no fenced block in the permissions section", path)
	}
	s = s[open+4:]
	end := strings.Index(s, "```")
	if end < 0 {
		t.Fatalf("%s: unterminated fenced block", path)
	}
	return strings.ReplaceAll(s[:end], `"…"`, `"`+DocumentedPassword+`"`)
}

// OperatorUser is an unrestricted user WithOperator adds to the POS
// account of the documented template (password DocumentedPassword): the
// tests look through it at what posedge-hq's restricted user may not
// (the stream's messages, the bucket's revisions), as an operator's NATS
// CLI would.
const OperatorUser = "operator"

// WithOperator returns conf, the documented template, with OperatorUser
// added to the POS account's users.
func WithOperator(t testing.TB, conf string) string {
	t.Helper()
	const at = "POS {\n    jetstream: enabled\n    users [\n"
	if !strings.Contains(conf, at) {
		t.Fatalf("the template has no POS account with JetStream and users")
	}
	return strings.Replace(conf, at, at+fmt.Sprintf("      {user: %q, password: %q}\n", OperatorUser, DocumentedPassword), 1)
}

// SecurityTemplateFor is SecurityTemplate with one store user per store
// id instead of the documented s001 and s002: each a copy of the
// documented s001 entry with S001 replaced.
func SecurityTemplateFor(t testing.TB, path string, stores ...string) string {
	t.Helper()
	conf := SecurityTemplate(t, path)
	start := strings.Index(conf, `{user: "s001"`)
	end := strings.Index(conf, `{user: "s002"`)
	if start < 0 || end < start {
		t.Fatalf("%s: the template has no s001 entry followed by s002", path)
	}
	entry := conf[start:end]
	last := strings.Index(conf[end:], "}}\n")
	if last < 0 {
		t.Fatalf("%s: unterminated s002 entry", path)
	}
	var users strings.Builder
	for _, s := range stores {
		users.WriteString(strings.NewReplacer("S001", s, "s001", strings.ToLower(s)).Replace(entry))
	}
	return conf[:start] + strings.TrimRight(users.String(), " \n") + "\n" + conf[end+last+3:]
}
