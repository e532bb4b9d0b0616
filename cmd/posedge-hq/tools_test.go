//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
)

// Checks of posedge-hq's packaging by tools nobody here wrote (promtool,
// systemd-analyze, lintian), run by `make test-tools` like the store's
// (cmd/posedge/tools_test.go). A missing tool fails: scripts/test-deps.sh
// installs it.

const (
	hqRules      = "../../packaging/prometheus/posedge-hq-alerts.yml"
	hqRulesTest  = "../../packaging/prometheus/posedge-hq-alerts_test.yml"
	hqDashboard  = "../../packaging/grafana/posedge-fleet-dashboard.json"
	hqUnitFile   = "../../packaging/systemd/posedge-hq.service"
	hqConfigFile = "../../configs/posedge-hq.example.yaml"
)

// The fleet alert rules load, and their unit tests pass (each alert
// fires for the store that should fire it, and not for the others).
func TestToolPromtoolHQRules(t *testing.T) {
	promtool := testenv.NeedTool(t, "promtool", "prometheus")
	if out, err := testenv.RunTool(nil, promtool, "check", "rules", hqRules); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := testenv.RunTool(nil, promtool, "test", "rules", hqRulesTest); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// A real posedge-hq that heard from a store (a sale and a heartbeat over
// NATS): its /metrics passes promtool check metrics, and every
// posedge_hq_* name the fleet alerts and dashboard use is in it, with a
// series for the store.
func TestToolPromtoolHQMetrics(t *testing.T) {
	promtool := testenv.NeedTool(t, "promtool", "prometheus")
	n := testenv.StartNATS(t)
	p := startHQ(t, n.URL(), "sqlite://"+filepath.Join(t.TempDir(), "hq.db"), "posedge-hq")
	nc, err := nats.Connect(n.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	pub := fleetPublisher{t: t, js: js}
	pub.sale("S001", "1", 100)
	if err := pub.heartbeat("S001", "v1.0.0", 0); err != nil {
		t.Fatal(err)
	}
	var body []byte
	testenv.WaitFor(t, waitLong, "S001's heartbeat in /metrics", func() bool {
		r, err := http.Get(p.admin + "/metrics")
		if err != nil {
			return false
		}
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
		return bytes.Contains(body, []byte(`posedge_hq_store_clock_offset_seconds{store_id="S001"}`))
	})
	// No lint let through: the one promtool had ("days" read as a unit,
	// posedge_hq_store_incomplete_days) was fixed by the name
	// posedge_hq_store_incomplete_manifests (issue 24).
	if out, err := testenv.RunTool(body, promtool, "check", "metrics"); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	checkDashboardMetrics(t, hqDashboard, body)
	have := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(posedge_hq_\w+)\{[^}]*store_id="S001"`).FindAllSubmatch(body, -1) {
		have[string(m[1])] = true
	}
	for _, file := range []string{hqRules, hqDashboard} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(file, ".json") {
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
		}
		used := map[string]bool{}
		for _, m := range regexp.MustCompile(`posedge_hq_store_[a-z0-9_]+`).FindAllString(string(b), -1) {
			used[m] = true
		}
		names := make([]string, 0, len(used))
		for m := range used {
			names = append(names, m)
			if !have[m] {
				t.Errorf("%s uses %s, which posedge-hq's /metrics has no S001 series of", filepath.Base(file), m)
			}
		}
		sort.Strings(names)
		t.Logf("%s uses %s", filepath.Base(file), strings.Join(names, " "))
	}
}

// dashboardExprs walks a Grafana dashboard's panels (rows' nested panels
// too) and returns each panel's title with its query expressions, and the
// template variables' queries under "templating".
func dashboardExprs(t *testing.T, b []byte) map[string][]string {
	t.Helper()
	type panel struct {
		Type    string  `json:"type"`
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Query any `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	out := map[string][]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			key := p.Type + " " + p.Title
			out[key] = []string{}
			for _, tg := range p.Targets {
				out[key] = append(out[key], tg.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		switch q := v.Query.(type) {
		case string:
			out["templating"] = append(out["templating"], q)
		case map[string]any:
			if s, ok := q["query"].(string); ok {
				out["templating"] = append(out["templating"], s)
			}
		}
	}
	return out
}

// Every panel of the fleet dashboard queries something, and every metric
// its expressions (and its template variables) name is one posedge-hq's
// /metrics exposes: a renamed metric fails here, not on a chain's
// Grafana (there is none on this machine to load it in).
func checkDashboardMetrics(t *testing.T, file string, metrics []byte) {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	exposed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\w+) (\w+)`).FindAllSubmatch(metrics, -1) {
		name := string(m[1])
		exposed[name] = true
		if string(m[2]) == "histogram" {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				exposed[name+suf] = true
			}
		}
	}
	ident := regexp.MustCompile(`\bposedge_\w+`)
	panels := dashboardExprs(t, b)
	if len(panels) < 2 {
		t.Fatalf("%s: %d panels found; is it still a dashboard?", filepath.Base(file), len(panels))
	}
	for title, exprs := range panels {
		if len(exprs) == 0 {
			t.Errorf("%s: panel %q has no query", filepath.Base(file), title)
		}
		for _, e := range exprs {
			if strings.TrimSpace(e) == "" {
				t.Errorf("%s: panel %q has an empty expr", filepath.Base(file), title)
			}
			for _, name := range ident.FindAllString(e, -1) {
				if !exposed[name] {
					t.Errorf("%s: panel %q queries %s, which posedge-hq's /metrics does not expose: %s", filepath.Base(file), title, name, e)
				}
			}
		}
	}
}

// systemd-analyze verify on the packaged unit with the binary and config
// where it names them replaced by ones that exist (verify checks
// ExecStart's binary): no word about the unit, and a misspelt key is
// noticed (the check has teeth).
func TestToolSystemdAnalyzeVerifyHQ(t *testing.T) {
	sa := testenv.NeedTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	exe := filepath.Join(dir, "posedge-hq")
	data, err := os.ReadFile(hqBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	unit := strings.ReplaceAll(testenv.ReadFile(t, hqUnitFile), "/usr/bin/posedge-hq ", exe+" ")
	write := func(name, body string) string {
		p := filepath.Join(dir, name, "posedge-hq.service")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if out, err := testenv.RunTool(nil, sa, "verify", write("packaged", unit)); err != nil || strings.Contains(out, "posedge-hq.service") {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	bad := write("bad", strings.Replace(unit, "RestartSec=", "RestartSecs=", 1))
	if out, _ := testenv.RunTool(nil, sa, "verify", bad); !strings.Contains(out, "RestartSecs") {
		t.Errorf("systemd-analyze did not notice a bad key: %s", out)
	}
}

// The packaged unit's sandbox scores at most 2.0 in `systemd-analyze
// security --offline=yes`, like the store's; the same unit without its
// sandbox is far above (the check can tell).
func TestToolSystemdAnalyzeSecurityHQ(t *testing.T) {
	sa := testenv.NeedTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	overall := regexp.MustCompile(`Overall exposure level for posedge-hq\.service: ([0-9.]+)`)
	score := func(name, unit string) float64 {
		t.Helper()
		p := filepath.Join(dir, name, "posedge-hq.service")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(unit), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := testenv.RunTool(nil, sa, "security", "--offline=yes", "--no-pager", p)
		m := overall.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("systemd-analyze security (%s): no overall level:\n%s", name, out)
		}
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		if f > 2.0 && name != "bare" {
			t.Logf("%s", out)
		}
		return f
	}
	unit := testenv.ReadFile(t, hqUnitFile)
	f := score("packaged", unit)
	if f > 2.0 {
		t.Errorf("packaged unit: exposure %.1f, want at most 2.0", f)
	}
	t.Logf("posedge-hq.service exposure %.1f", f)
	var bare []string
	inSandbox := false
	for _, l := range strings.Split(unit, "\n") {
		switch {
		case strings.HasPrefix(l, "# Sandbox:"):
			inSandbox = true
		case inSandbox && strings.HasPrefix(l, "LimitNOFILE"):
			inSandbox = false
		}
		if !inSandbox {
			bare = append(bare, l)
		}
	}
	if f := score("bare", strings.Join(bare, "\n")); f < 5 {
		t.Errorf("the unit without its sandbox scores %.1f: the check cannot tell", f)
	}
}

// lintian on the posedge-hq .deb files `make package` built: no errors.
func TestToolLintianHQ(t *testing.T) {
	lintian := testenv.NeedTool(t, "lintian", "lintian")
	dist := os.Getenv("POSEDGE_DIST")
	if dist == "" {
		t.Skip("POSEDGE_DIST unset: make test-tools builds the packages and sets it")
	}
	debs, _ := filepath.Glob(filepath.Join(dist, "posedge-hq_"+os.Getenv("POSEDGE_PKG_VERSION")+"*.deb"))
	if len(debs) < 2 {
		t.Fatalf("want the amd64 and arm64 posedge-hq .deb in %s, found %v", dist, debs)
	}
	for _, deb := range debs {
		out, err := testenv.RunTool(nil, lintian, "--fail-on", "error", "--allow-root", deb)
		if err != nil {
			t.Errorf("lintian %s: %v\n%s", filepath.Base(deb), err, out)
		} else {
			t.Logf("lintian %s: no errors\n%s", filepath.Base(deb), out)
		}
	}
}

// The example config, as the package installs it, passes check-config
// (the unit's ExecStartPre) once nats_url points somewhere.
func TestToolPackagedConfigChecks(t *testing.T) {
	code, out, errOut := runHQ(t, "check-config", "--config", hqConfigFile)
	if code != 0 || !strings.Contains(out, "OK") {
		t.Errorf("check-config of the packaged example: exit %d, %s%s", code, out, errOut)
	}
}
