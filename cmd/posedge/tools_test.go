//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// Checks by tools nobody here wrote: promtool, systemd-analyze, lintian,
// Redocly CLI (npm).
// `make test-tools` (called by `make test`) runs every TestTool* after
// building the packages. Without a tool the test fails, saying what to
// install, in CI and elsewhere alike.

// needTool returns the tool's path, or fails naming the package that
// provides it.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	// make test installs it (scripts/test-deps.sh): missing is a failure,
	// never a silent skip.
	t.Fatalf("%s not found: scripts/test-deps.sh (make test) installs the Debian package %s", name, pkg)
	return ""
}

func runTool(t *testing.T, stdin []byte, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// storeBinaries builds posedge and posedge-hq once for this test binary.
func storeBinaries(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "posedge-tools-bin-")
		if binErr == nil {
			binErr = testenv.BuildBinaries(binDir)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// metricsExpectedMissing are metrics the dashboard and the alerts use that
// the daemon does not export yet (asked for in issue 7). When one appears,
// the test says so and it can leave this list.
var metricsExpectedMissing = map[string]bool{}

// A whole store (Redis Sentinel, NATS, posedge-hq, posedge) sells a
// little, then its real /metrics goes through promtool check metrics, and
// every posedge_* name the dashboard and the alerts use must be in it.
func TestToolPromtoolCheckMetrics(t *testing.T) {
	promtool := needTool(t, "promtool", "prometheus")
	s := testenv.StartStore(t, testenv.StoreOptions{Bin: storeBinaries(t), Terminals: 2})
	s.PutItem("4006381333931", 350, 100)
	for i := 0; i < 5; i++ {
		if r := s.Sale("T01", fmt.Sprintf("tools-%d", i), "4006381333931", 1, 350); r.Status != 201 {
			t.Fatalf("sale: %d %s %v", r.Status, r.Body, r.Err)
		}
	}
	if r := s.T("T02", "GET", "/v1/items/4006381333931", nil, nil); r.Status != 200 {
		t.Fatalf("lookup: %d %s", r.Status, r.Body)
	}
	res, err := http.Get(s.AdminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(body, []byte("posedge_sales_total")) {
		t.Fatalf("/metrics: %d\n%.2000s", res.StatusCode, body)
	}
	if out, err := runTool(t, body, promtool, "check", "metrics"); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}

	have := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (posedge_\w+) `).FindAllSubmatch(body, -1) {
		have[string(m[1])] = true
	}
	names := make([]string, 0, len(have))
	for n := range have {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("posedge metrics on /metrics (%d): %s", len(names), strings.Join(names, " "))

	for _, file := range []string{"../../packaging/grafana/posedge-dashboard.json", "../../packaging/prometheus/posedge-alerts.yml"} {
		used := usedMetrics(t, file)
		for _, n := range used {
			switch {
			case have[n] && metricsExpectedMissing[n]:
				t.Errorf("%s now exists: remove it from metricsExpectedMissing", n)
			case have[n], metricsExpectedMissing[n]:
			default:
				t.Errorf("%s uses %s, which /metrics does not have", filepath.Base(file), n)
			}
		}
	}
}

// usedMetrics lists the posedge_* metric names an expression file uses,
// histogram suffixes folded into the histogram's name.
func usedMetrics(t *testing.T, file string) []string {
	t.Helper()
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
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`posedge_[a-z0-9_]+`).FindAllString(string(b), -1) {
		m = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_sum"), "_count")
		if strings.HasPrefix(m, "posedge_hq_") && m != "posedge_hq_connected" {
			continue // posedge-hq's metrics, not the store daemon's
		}
		seen[m] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func TestToolPromtoolCheckRules(t *testing.T) {
	promtool := needTool(t, "promtool", "prometheus")
	dir := "../../packaging/prometheus"
	if out, err := runTool(t, nil, promtool, "check", "rules", filepath.Join(dir, "posedge-alerts.yml")); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := runTool(t, nil, promtool, "test", "rules", filepath.Join(dir, "posedge-alerts_test.yml")); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// systemd-analyze verify on the unit as `posedge install` writes it, with
// binary and config that exist (verify checks ExecStart's binary). It
// exits 0 on unknown keys, so any word it says about the unit fails too.
func TestToolSystemdAnalyzeVerify(t *testing.T) {
	sa := needTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	exe := filepath.Join(dir, "posedge")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, "127.0.0.1:8081", "/var/lib/posedge/journal.db")
	for name, unit := range map[string]string{
		"installed": renderUnit(unitParams{Exe: exe, Config: cfg, Journal: "/var/lib/posedge/journal.db"}),
		"packaged": strings.Replace(mustRead(t, packagedUnitFile), "ExecStart=/usr/bin/posedge ",
			"ExecStart="+exe+" ", 1),
	} {
		udir := filepath.Join(dir, name)
		if err := os.MkdirAll(udir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(udir, "posedge.service")
		if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := runTool(t, nil, sa, "verify", path)
		if err != nil || strings.Contains(out, "posedge.service") {
			t.Errorf("systemd-analyze verify (%s unit): %v\n%s", name, err, out)
		}
	}
	// The check has teeth: a misspelt key is reported.
	bad := filepath.Join(dir, "bad", "posedge.service")
	_ = os.MkdirAll(filepath.Dir(bad), 0o755)
	_ = os.WriteFile(bad, []byte(strings.Replace(renderUnit(unitParams{Exe: exe, Config: cfg}), "RestartSec=", "RestartSecs=", 1)), 0o644)
	if out, _ := runTool(t, nil, sa, "verify", bad); !strings.Contains(out, "RestartSecs") {
		t.Errorf("systemd-analyze did not notice a bad key: %s", out)
	}
}

// The unit's sandbox scores at most 2.0 in `systemd-analyze security
// --offline=yes`, installed and packaged alike; the check has teeth: the
// same unit without its sandbox is far above.
func TestToolSystemdAnalyzeSecurity(t *testing.T) {
	sa := needTool(t, "systemd-analyze", "systemd")
	dir := t.TempDir()
	overall := regexp.MustCompile(`Overall exposure level for posedge\.service: ([0-9.]+)`)
	score := func(name, unit string) float64 {
		t.Helper()
		udir := filepath.Join(dir, name)
		if err := os.MkdirAll(udir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(udir, "posedge.service")
		if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := runTool(t, nil, sa, "security", "--offline=yes", "--no-pager", path)
		m := overall.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("systemd-analyze security (%s): no overall level:\n%s", name, out)
		}
		var f float64
		fmt.Sscan(m[1], &f)
		// The "bare" copy is the control, stripped of its sandbox on
		// purpose: its high score is the expected result, not logged.
		if f > 2.0 && name != "bare" {
			t.Logf("%s", out)
		}
		return f
	}
	installed := renderUnit(unitParams{Exe: "/usr/local/bin/posedge", Config: "/etc/posedge/posedge.yaml", Journal: "/srv/posedge/journal.db"})
	for name, unit := range map[string]string{"packaged": mustRead(t, packagedUnitFile), "installed": installed} {
		if f := score(name, unit); f > 2.0 {
			t.Errorf("%s unit: exposure %.1f, want at most 2.0", name, f)
		}
	}
	var bare []string
	inSandbox := false
	for _, l := range strings.Split(installed, "\n") {
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

// lintian on the .deb files `make package` built: no errors.
func TestToolLintian(t *testing.T) {
	lintian := needTool(t, "lintian", "lintian")
	dist := os.Getenv("POSEDGE_DIST")
	if dist == "" {
		t.Skip("POSEDGE_DIST unset: make test-tools builds the packages and sets it")
	}
	debs, _ := filepath.Glob(filepath.Join(dist, "posedge_"+os.Getenv("POSEDGE_PKG_VERSION")+"*.deb"))
	if len(debs) < 2 {
		t.Fatalf("want the amd64 and arm64 .deb in %s, found %v", dist, debs)
	}
	for _, deb := range debs {
		start := time.Now()
		out, err := runTool(t, nil, lintian, "--fail-on", "error", "--allow-root", deb)
		if err != nil {
			t.Errorf("lintian %s: %v\n%s", filepath.Base(deb), err, out)
		} else {
			t.Logf("lintian %s: no errors (%v)\n%s", filepath.Base(deb), time.Since(start).Round(time.Millisecond), out)
		}
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// redocly is Redocly CLI from the npm registry, installed by `make
// test-tools` under bin/tools (POSEDGE_REDOCLY), else found on PATH.
func redocly(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("POSEDGE_REDOCLY"); p != "" {
		return p
	}
	if p, err := exec.LookPath("redocly"); err == nil {
		return p
	}
	t.Fatal("redocly not found: run through `make test-tools` (make test), which installs @redocly/cli with npm")
	return ""
}

// redoclyProblem is a problem line of `redocly lint --format=stylish`.
var redoclyProblem = regexp.MustCompile(`(?m)^\s+\d+:\d+\s+(error|warning)\s+(\S+)`)

// Redocly's linter on docs/openapi.yaml and docs/openapi-hq.yaml with docs/redocly.yaml (the
// recommended rules, examples checked against their schemas as errors):
// any error or warning fails; the exceptions, each justified, are in
// docs/.redocly.lint-ignore.yaml. A copy with one example broken must
// fail, so the check is known to look at the examples.
func TestToolRedoclyLint(t *testing.T) {
	bin := redocly(t)
	const (
		spec   = "../../docs/openapi.yaml"
		config = "../../docs/redocly.yaml"
	)
	lint := func(path string) (string, error) {
		cmd := exec.Command(bin, "lint", "--config", config, "--format=stylish", path)
		cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, file := range []string{spec, "../../docs/openapi-hq.yaml"} {
		out, err := lint(file)
		if err != nil || redoclyProblem.MatchString(out) {
			t.Fatalf("redocly lint %s: %v\n%s", file, err, out)
		}
	}

	good := mustRead(t, spec)
	const healthz = "example: {status: ok}"
	if !strings.Contains(good, healthz) {
		t.Fatalf("%s: no %q to break", spec, healthz)
	}
	broken := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(broken, []byte(strings.Replace(good, healthz, "example: {status: okay}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := lint(broken)
	caught := false
	for _, m := range redoclyProblem.FindAllStringSubmatch(out, -1) {
		caught = caught || (m[1] == "error" && m[2] == "no-invalid-media-type-examples")
	}
	if err == nil || !caught {
		t.Fatalf("redocly lint passed an example that breaks its schema (%v):\n%s", err, out)
	}
}
