//go:build !windows

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// lockedBuffer is a bytes.Buffer the daemon's logger and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Every secret of a config seeded with unique markers stays out of every
// channel a person reads: check-config (valid, invalid, not YAML), the
// daemon's log, its status JSON (hq.last_error included), `posedge
// status --json`, and the support bundle (valid and broken config).
func TestSecretsNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	markers := map[string]string{
		"redis.password":          "MkRedisPw7731",
		"redis.sentinel_password": "MkSentinelPw7732",
		"hq.nats_url password":    "MkNatsPw7733",
		"hq.nats_url user":        "MkNatsUser7734",
		"admin token":             "MkAdminToken7735-" + strings.Repeat("x", 20),
		"terminal key":            "MkTerminalKey7736",
	}
	sum := sha256.Sum256([]byte(markers["terminal key"]))
	markers["terminal key_sha256"] = hex.EncodeToString(sum[:])
	tok := filepath.Join(dir, "admin.token")
	os.WriteFile(tok, []byte(markers["admin token"]+"\n"), 0o600)
	adminAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	body := fmt.Sprintf(`store_id: "S777"
listen: "127.0.0.1:%d"
admin: {listen: %q, token_file: %q}
redis:
  sentinels: ["127.0.0.1:1"]
  password: %q
  sentinel_password: %q
journal: {path: %q}
hq: {nats_url: "nats://%s:%s@127.0.0.1:1"}
terminals:
  - {id: "T01", key_sha256: %q}
`, testenv.FreePort(t), adminAddr, tok, markers["redis.password"], markers["redis.sentinel_password"], filepath.Join(dir, "journal.db"),
		markers["hq.nats_url user"], markers["hq.nats_url password"], markers["terminal key_sha256"])
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(body), 0o600)
	// A typo next to the password: goccy/go-yaml would print these lines.
	broken := filepath.Join(dir, "broken.yaml")
	os.WriteFile(broken, []byte(strings.Replace(body, "  sentinel_password:", "   sentinel_password:", 1)), 0o600)
	// Valid YAML, invalid config: a bad value next to the secrets.
	invalid := filepath.Join(dir, "invalid.yaml")
	os.WriteFile(invalid, []byte(strings.Replace(body, "redis:\n", "redis:\n  timeout: \"soon\"\n", 1)), 0o600)

	outputs := map[string]string{}
	capture := func(name string, args ...string) {
		var out, errb bytes.Buffer
		err := run(context.Background(), args, &out, &errb)
		outputs[name] = out.String() + errb.String() + fmt.Sprint(err)
	}
	capture("check-config good", "check-config", "--config", good)
	capture("check-config broken", "check-config", "--config", broken)
	capture("check-config invalid", "check-config", "--config", invalid)
	if !strings.Contains(outputs["check-config broken"], "line 7") || !strings.Contains(outputs["check-config invalid"], "redis.timeout") {
		t.Errorf("check-config does not say where the problem is:\n%s\n%s", outputs["check-config broken"], outputs["check-config invalid"])
	}
	capture("run broken", "run", "--config", broken)
	for _, c := range []string{good, broken} {
		out := filepath.Join(dir, filepath.Base(c)+".tar.gz")
		capture("support-bundle "+c, "support-bundle", "--config", c, "--out", out, "--timeout", "300ms")
		for name, data := range readBundle(t, out) {
			outputs["bundle "+filepath.Base(c)+" "+name] = data
		}
	}

	// The daemon itself: its log and its status while HQ is unreachable.
	log := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"run", "--config", good}, io.Discard, log) }()
	var status string
	testenv.WaitFor(t, 30*time.Second, "hq.last_error in the daemon's status", func() bool {
		req, _ := http.NewRequest("GET", "http://"+adminAddr+"/admin/v1/status", nil)
		req.Header.Set("Authorization", "Bearer "+markers["admin token"])
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		status = string(b)
		return strings.Contains(status, `"last_error"`)
	})
	outputs["daemon status"] = status
	capture("posedge status --json", "status", "--config", good, "--json")
	capture("support-bundle daemon up", "support-bundle", "--config", good, "--out", filepath.Join(dir, "up.tar.gz"))
	for name, data := range readBundle(t, filepath.Join(dir, "up.tar.gz")) {
		outputs["bundle up "+name] = data
	}
	cancel()
	<-done
	outputs["daemon log"] = log.String()
	if !strings.Contains(outputs["daemon log"], "nats://xxxxx@127.0.0.1:1") || !strings.Contains(status, "xxxxx@") {
		t.Errorf("the NATS URL is not shown redacted:\nlog: %s\nstatus: %s", outputs["daemon log"], status)
	}

	for ch, text := range outputs {
		for what, m := range markers {
			if strings.Contains(text, m) {
				t.Errorf("%s shows the %s:\n%s", ch, what, text)
			}
		}
	}
}
