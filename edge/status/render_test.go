package status

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/posedge/posedge/edge/health"

	"github.com/posedge/posedge/internal/testenv/golden"
)

// The technician's screen, as golden files: go test ./edge/status -update
// rewrites them; review the diff like any other change.
func TestRenderGolden(t *testing.T) {
	worst := healthy()
	worst.Redis = health.Redis{OK: false, Master: "10.0.0.5:6379", Error: "dial tcp 10.0.0.5:6379: connect: connection refused",
		WantReplicas: 2, Sentinels: 1, SentinelsAll: 3}
	worst.Ledger.Degraded, worst.Limiter.Fallback = true, true
	worst.HQ = health.HQ{Connected: false, LastSyncAt: ago(3 * time.Hour), Backlog: 5230, OldestUnsynced: ago(3 * time.Hour),
		LastError: "nats: no servers available for connection"}
	worst.Journal.DiskFree, worst.Journal.SizeBytes, worst.Journal.Quarantined = 200<<20, 3<<30, 2
	worst.Reconciliation = 4
	worst.Terminals = manyTerminals(12)

	down := Facts{Now: now, DaemonError: "dial tcp 127.0.0.1:8081: connect: connection refused (admin 127.0.0.1:8081)", StoreID: "S001",
		HQ:      health.HQ{Backlog: 42, OldestUnsynced: ago(20 * time.Minute), LastSyncAt: ago(20 * time.Minute)},
		Journal: health.Journal{Path: "/var/lib/posedge/journal.db", SizeBytes: 48 << 20, DiskFree: 20 << 30, Rows: 18234}}

	warn := healthy()
	warn.Redis.Replicas = 1
	warn.HQ.Connected, warn.HQ.Backlog, warn.HQ.OldestUnsynced = false, 87, ago(12*time.Minute)

	stalled := healthy()
	stalled.HQ.Backlog, stalled.HQ.OldestUnsynced = 40, ago(45*time.Second)
	stalled.HQ.LastAckAt, stalled.HQ.AwaitingAckSince = ago(46*time.Second), ago(45*time.Second)
	stalled.HQ.LastError = "nats: timeout waiting for ack"
	stalled.Redis.Latency = 190 * time.Millisecond

	// As the daemon reports it: Redis probed 2 s ago, every Redis line
	// with that age; then the prober stuck for 14 s.
	probed := healthy()
	probed.Redis.SeenAt = now.Add(-2 * time.Second)
	stale := healthy()
	stale.Redis.SeenAt = now.Add(-14 * time.Second)
	staleTh := thresholds()
	staleTh.StaleAfter = StaleAfter

	cases := map[string]Report{
		"probed":       Evaluate(probed, staleTh),
		"stale":        Evaluate(stale, staleTh),
		"hq-stalled":   Evaluate(stalled, thresholds()),
		"ok":           Evaluate(healthy(), thresholds()),
		"warn":         Evaluate(warn, thresholds()),
		"crit":         Evaluate(worst, thresholds()),
		"daemon-down":  Evaluate(down, thresholds()),
		"config-error": ConfigErrorReport("/etc/posedge/posedge.yaml", "/etc/posedge/posedge.yaml: 1 problem(s):\n  - store_id: required"),
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", name+".golden"), b.Bytes())
			// One screen: 24 lines of at most 100 columns, OK/WARN/CRIT
			// at the start of every check line.
			lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
			if len(lines) > 24 {
				t.Errorf("%d lines: more than one screen", len(lines))
			}
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > 100 {
					t.Errorf("line of %d columns: %q", n, l)
				}
			}
			for _, c := range r.Checks {
				if !strings.Contains(b.String(), "  "+strings.ToUpper(string(c.Status))+" ") {
					t.Errorf("no %s line for check %s", strings.ToUpper(string(c.Status)), c.Name)
				}
			}
		})
	}
}
