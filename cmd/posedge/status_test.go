package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/status"
	"github.com/posedge/posedge/offline/journal"
)

// Secrets the test configs hold; no output may show them.
const (
	secretHash     = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	secretPassword = "s3cr3t-redis-pw"
	secretSentinel = "s3cr3t-sentinel-pw"
)

// writeConfig writes a valid posedge.yaml into dir.
func writeConfig(t *testing.T, dir, adminListen, journalPath string) string {
	t.Helper()
	p := filepath.Join(dir, "posedge.yaml")
	body := fmt.Sprintf(`# test store
store_id: "S042"
admin: {listen: %q}
redis:
  sentinels: ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]
  password: %q
  sentinel_password: %q
journal:
  path: %q
hq: {nats_url: "nats://127.0.0.1:1"}
terminals:
  - id: "T01"
    key_sha256: %q
  - {id: "T02", key_sha256: "%s"}
`, adminListen, secretPassword, secretSentinel, journalPath, secretHash, strings.Repeat("ab", 32))
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// buildJournal writes n sales into a new journal, the first acked of
// them acknowledged by HQ, and closes it.
func buildJournal(t *testing.T, path string, n, acked int) {
	t.Helper()
	ctx := context.Background()
	j, err := journal.Open(ctx, path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var flows []string
	for i := 1; i <= n; i++ {
		f := fmt.Sprintf("1%015d", i)
		err := j.Append(ctx, journal.Txn{FlowNo: f, Seq: int64(i), TerminalID: "T01", IdemKey: fmt.Sprintf("k%d", i),
			Fingerprint: "fp", Kind: "sale", Tender: "cash", TotalCents: 350, BusinessDay: "20261130", BusinessHour: "10",
			CreatedAt: time.Now().Add(-10 * time.Minute), Lines: []journal.Line{{Barcode: "A", Qty: 1, PriceCents: 350}},
			Body: []byte(`{"flow_no":"` + f + `"}`), Applied: true, Mode: journal.ModeNormal})
		if err != nil {
			t.Fatal(err)
		}
		if i <= acked {
			flows = append(flows, f)
		}
	}
	if len(flows) > 0 {
		if err := j.MarkAcked(ctx, flows...); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func runCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	code := 0
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if err != nil {
		t.Fatalf("posedge %s: %v", strings.Join(args, " "), err)
	}
	return out.String() + errb.String(), code
}

// The daemon does not answer: CRIT (exit 2), and the journal, opened
// read-only, still tells the rows and the backlog.
func TestStatusWhenTheDaemonDoesNotAnswer(t *testing.T) {
	dir := t.TempDir()
	jp := filepath.Join(dir, "journal.db")
	buildJournal(t, jp, 7, 3)
	cfg := writeConfig(t, dir, deadAddr(t), jp)

	out, code := runCmd(t, "status", "--config", cfg, "--timeout", "500ms")
	if code != 2 {
		t.Fatalf("exit %d, want 2 (CRIT):\n%s", code, out)
	}
	for _, want := range []string{"status CRIT", "CRIT     daemon", "not answering", "is the posedge service running?",
		"7 rows", "HQ unreachable; 4 transactions waiting"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, code = runCmd(t, "status", "--config", cfg, "--json", "--timeout", "500ms")
	var r status.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 2 {
		t.Fatalf("exit %d, json %v:\n%s", code, err, out)
	}
	if r.Status != "crit" || r.Journal.Rows != 7 || r.HQ.Backlog != 4 || r.Journal.Path != jp || r.StoreID != "S042" ||
		r.HQ.OldestUnsyncedAgeSeconds < 500 {
		t.Fatalf("report %+v", r)
	}
	// The journal was only read: no WAL, nothing written.
	if _, err := os.Stat(jp + "-wal"); err == nil {
		if fi, _ := os.Stat(jp + "-wal"); fi.Size() > 0 {
			t.Error("status wrote to the journal")
		}
	}
}

// No journal either: still CRIT, saying so.
func TestStatusWithNeitherDaemonNorJournal(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, deadAddr(t), filepath.Join(dir, "missing.db"))
	out, code := runCmd(t, "status", "--config", cfg, "--timeout", "200ms")
	if code != 2 || !strings.Contains(out, "journal unreadable") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// A config that cannot be read is UNKNOWN (3): status cannot tell where
// the daemon or the journal are.
func TestStatusUnknownOnUnreadableConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("store_id: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	invalid := filepath.Join(dir, "invalid.yaml")
	if err := os.WriteFile(invalid, []byte("store_id: \"S1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "missing.yaml"), bad, invalid, dir} {
		out, code := runCmd(t, "status", "--config", p)
		if code != 3 || !strings.Contains(out, "UNKNOWN") || !strings.Contains(out, "posedge check-config --config") {
			t.Errorf("%s: exit %d, want 3:\n%s", p, code, out)
		}
		out, code = runCmd(t, "status", "--config", p, "--json")
		if code != 3 || !strings.Contains(out, `"status": "unknown"`) || !strings.Contains(out, "posedge check-config --config "+p) {
			t.Errorf("%s --json: exit %d:\n%s", p, code, out)
		}
	}
	if _, code := runCmd(t, "status", "--bogus-flag"); code != 3 {
		t.Errorf("bad flag: exit %d, want 3", code)
	}
}

// With a daemon answering, status prints its report and exits with the
// report's level: 0, 1 or 2.
func TestStatusAsksTheDaemon(t *testing.T) {
	for level, code := range map[status.Level]int{status.OK: 0, status.Warn: 1, status.Crit: 2} {
		t.Run(string(level), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/admin/v1/status" {
					http.NotFound(w, r)
					return
				}
				_ = json.NewEncoder(w).Encode(status.Report{Status: level, Version: "9.9.9", StoreID: "S042", Mode: "normal",
					Checks: []status.Check{{Name: "redis", Status: level, Detail: "master 127.0.0.1:6379", Hint: "look"}}})
			}))
			defer srv.Close()
			dir := t.TempDir()
			cfg := writeConfig(t, dir, strings.TrimPrefix(srv.URL, "http://"), filepath.Join(dir, "j.db"))
			out, got := runCmd(t, "status", "--config", cfg)
			if got != code || !strings.Contains(out, "posedge 9.9.9  store S042") {
				t.Fatalf("exit %d, want %d:\n%s", got, code, out)
			}
		})
	}
}
