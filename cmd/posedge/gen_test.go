package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// gen-terminal-key prints a key and the config line holding its sha256,
// a new key every time.
func TestGenTerminalKey(t *testing.T) {
	line := regexp.MustCompile(`- \{id: "T07", key_sha256: "([0-9a-f]{64})"\}`)
	seen := map[string]bool{}
	for range 2 {
		out, code := runCmd(t, "gen-terminal-key", "T07")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		key, _, _ := strings.Cut(out, "\n")
		m := line.FindStringSubmatch(out)
		if len(key) < 32 || m == nil {
			t.Fatalf("no key or config line:\n%s", out)
		}
		sum := sha256.Sum256([]byte(key))
		if m[1] != hex.EncodeToString(sum[:]) {
			t.Errorf("config line holds %s, sha256 of the key is %x", m[1], sum)
		}
		if seen[key] {
			t.Errorf("the same key twice: %s", key)
		}
		seen[key] = true
	}
	if _, code := runCmd(t, "gen-terminal-key", "T 07"); code != 2 {
		t.Errorf("bad id: exit %d, want 2", code)
	}
}

// gen-admin-token --out writes a token check-config accepts with the
// admin API on the LAN; a 6-character token there is refused naming
// admin.token_file and not quoted; the file is never overwritten.
func TestGenAdminTokenAndCheckConfig(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "admin.token")
	out, code := runCmd(t, "gen-admin-token", "--out", tok)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("token_file: %q", tok)) {
		t.Fatalf("exit %d: %s", code, out)
	}
	if fi, err := os.Stat(tok); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	cfg := writeConfig(t, dir, "0.0.0.0:18081", filepath.Join(dir, "j.db"))
	body, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(body), "admin: {listen: ", "admin: {token_file: \""+tok+"\", listen: ", 1)), 0o600)
	if out, code := runCmd(t, "check-config", "--config", cfg); code != 0 {
		t.Fatalf("generated token refused: exit %d: %s", code, out)
	}
	os.Remove(tok)
	os.WriteFile(tok, []byte("s3cr3t\n"), 0o600)
	err := run(context.Background(), []string{"check-config", "--config", cfg}, io.Discard, io.Discard)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(err.Error(), "admin.token_file:") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("weak token: %v", err)
	}
	if err := run(context.Background(), []string{"gen-admin-token", "--out", tok}, io.Discard, io.Discard); err == nil {
		t.Error("overwrote an existing token file")
	}
}
