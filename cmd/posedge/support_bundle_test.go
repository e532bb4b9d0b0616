package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posedge/posedge/edge/status"
	"github.com/posedge/posedge/offline/journal"
)

func readBundle(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		_, name, _ := strings.Cut(h.Name, "/")
		files[name] = string(b)
	}
	return files
}

// The daemon is down: the bundle still has the redacted config, the
// offline status, the journal's figures and the versions, and no secret.
func TestSupportBundle(t *testing.T) {
	dir := t.TempDir()
	jp := filepath.Join(dir, "journal.db")
	buildJournal(t, jp, 5, 2)
	cfg := writeConfig(t, dir, deadAddr(t), jp)
	tok := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(tok, []byte("admin-token-value-xyz-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logf := filepath.Join(dir, "posedge.log")
	if err := os.WriteFile(logf, []byte("level=INFO msg=\"posedge serving\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bundle.tar.gz")
	msg, code := runCmd(t, "support-bundle", "--config", cfg, "--out", out, "--timeout", "300ms", "--log-file", logf)
	if code != 0 || !strings.Contains(msg, out) {
		t.Fatalf("exit %d: %s", code, msg)
	}
	files := readBundle(t, out)
	for _, name := range []string{"MANIFEST.txt", "config.yaml", "config-check.txt", "status.txt", "status.json",
		"journal-stats.json", "versions.txt", "logs/posedge.log"} {
		if files[name] == "" {
			t.Errorf("bundle lacks %s (has %v)", name, keys(files))
		}
	}
	all := strings.Join(values(files), "\n")
	for _, secret := range []string{secretHash, secretPassword, secretSentinel, strings.Repeat("ab", 32), "admin-token-value-xyz-0123456789abcdef"} {
		if strings.Contains(all, secret) {
			t.Errorf("bundle contains secret %q", secret)
		}
	}
	if !strings.Contains(files["config.yaml"], "REDACTED") || !strings.Contains(files["config.yaml"], "S042") ||
		!strings.Contains(files["config.yaml"], "T02") {
		t.Errorf("config.yaml:\n%s", files["config.yaml"])
	}
	var r status.Report
	if err := json.Unmarshal([]byte(files["status.json"]), &r); err != nil || r.Status != "crit" || r.Journal.Rows != 5 {
		t.Errorf("status.json %v: %s", err, files["status.json"])
	}
	var st journal.Stats
	if err := json.Unmarshal([]byte(files["journal-stats.json"]), &st); err != nil || st.Rows != 5 || st.Backlog != 3 {
		t.Errorf("journal-stats.json %v: %s", err, files["journal-stats.json"])
	}
	if !strings.Contains(files["versions.txt"], "posedge ") || !strings.Contains(files["versions.txt"], "go1.") {
		t.Errorf("versions.txt: %s", files["versions.txt"])
	}
	if !strings.Contains(files["MANIFEST.txt"], "offline report") {
		t.Errorf("MANIFEST.txt does not say the status is the offline one:\n%s", files["MANIFEST.txt"])
	}
	// Never overwrites.
	err := run(context.Background(), []string{"support-bundle", "--config", cfg, "--out", out, "--timeout", "100ms"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("second bundle over the first: %v", err)
	}
}

// A config that does not even parse still goes in, redacted line by line.
func TestSupportBundleBrokenConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "posedge.yaml")
	body := "store_id: [broken\nredis: {password: \"" + secretPassword + "\", addr: \"x:1\"}\nterminals:\n  - {id: T01, key_sha256: " + secretHash +
		"}\nadmin:\n  token_file: /etc/posedge/admin.token\nhq:\n  secret: |\n    line one " + secretSentinel + "\n    line two\nlog: {}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "b.tar.gz")
	if msg, code := runCmd(t, "support-bundle", "--config", cfg, "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	files := readBundle(t, out)
	c := files["config.yaml"]
	for _, secret := range []string{secretHash, secretPassword, secretSentinel} {
		if strings.Contains(c, secret) {
			t.Errorf("config.yaml contains %q:\n%s", secret, c)
		}
	}
	if !strings.Contains(c, "token_file: /etc/posedge/admin.token") || !strings.Contains(c, "line by line") || !strings.Contains(c, "log: {}") {
		t.Errorf("config.yaml:\n%s", c)
	}
	if !strings.Contains(files["config-check.txt"], "parse") {
		t.Errorf("config-check.txt: %s", files["config-check.txt"])
	}
}

func keys(m map[string]string) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}

func values(m map[string]string) []string {
	var v []string
	for _, s := range m {
		v = append(v, s)
	}
	return v
}
