package conventions

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

type pkg struct {
	ImportPath   string
	Name         string
	Doc          string
	Imports      []string
	TestImports  []string
	XTestImports []string
	GoFiles      []string
	Deps         []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "github.com/posedge/posedge/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var ps []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if len(ps) < 10 {
		t.Fatalf("go list found only %d packages", len(ps))
	}
	return ps
}

func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range listPackages(t) {
		if len(p.GoFiles) == 0 {
			continue
		}
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc comment (add a doc.go)", p.ImportPath)
		}
	}
}

// Import rules: the store side never links HQ code; HQ never links the
// store's; the test harness stays out of shipped binaries; no package is
// named util or common.
func TestImportRules(t *testing.T) {
	const mod = "github.com/posedge/posedge/"
	rules := []struct {
		from, banned, why string
	}{
		{mod + "edge/", mod + "sync/hq", "the edge daemon must not link the HQ receiver"},
		{mod + "offline/", mod + "sync/hq", "the journal must not link the HQ receiver"},
		{mod + "sync/hq", mod + "edge/", "posedge-hq must not link the edge daemon"},
		{mod + "sync/hq", mod + "offline/", "posedge-hq must not link the store's journal"},
		{mod + "offline/", mod + "edge/", "the journal knows nothing of HTTP or Redis"},
	}
	for _, p := range listPackages(t) {
		for _, seg := range strings.Split(strings.TrimPrefix(p.ImportPath, mod), "/") {
			if seg == "util" || seg == "utils" || seg == "common" {
				t.Errorf("%s: a package names what it is, never util or common", p.ImportPath)
			}
		}
		if !strings.HasSuffix(p.ImportPath, "internal/testenv") {
			for _, imp := range p.Imports {
				if imp == mod+"internal/testenv" {
					t.Errorf("%s imports the test harness outside tests", p.ImportPath)
				}
			}
		}
		for _, r := range rules {
			if !strings.HasPrefix(p.ImportPath, r.from) {
				continue
			}
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, r.banned) {
					t.Errorf("%s imports %s: %s", p.ImportPath, imp, r.why)
				}
			}
		}
	}
}

// The money core knows no HTTP: request decoding and the mapping of
// refusals to status codes live in edge/api, so the ledger, the limiter,
// the journal and the replayer can be tested and reused without a server.
// Data flows one way (api → ratelimit, ledger → lua, journal → replay →
// hq): nothing below the API links it, even through another package.
func TestLayering(t *testing.T) {
	const mod = "github.com/posedge/posedge/"
	noHTTP := []string{mod + "edge/ledger", mod + "edge/ratelimit", mod + "offline/", mod + "sync/replay", mod + "lua"}
	rules := []struct {
		from, banned, why string
	}{
		{mod + "edge/ledger", mod + "edge/api", "the ledger is below the API"},
		{mod + "edge/ratelimit", mod + "edge/api", "the limiter is below the API"},
		{mod + "edge/ratelimit", mod + "edge/ledger", "the limiter decides without the money path"},
		{mod + "offline/", mod + "edge/api", "the journal is below the API"},
		{mod + "sync/replay", mod + "edge/", "the replayer reads the journal, never the edge daemon"},
		{mod + "sync/hq", mod + "edge/", "posedge-hq must not link the edge daemon"},
		{mod + "sync/hq", mod + "offline/", "posedge-hq must not link the store's journal"},
		{mod + "lua", mod + "edge/", "scripts know no caller"},
	}
	under := func(path, prefix string) bool {
		return path == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(path, strings.TrimSuffix(prefix, "/")+"/")
	}
	checked := 0
	for _, p := range listPackages(t) {
		for _, prefix := range noHTTP {
			if !under(p.ImportPath, prefix) {
				continue
			}
			checked++
			for _, imp := range p.Imports {
				if imp == "net/http" || strings.HasPrefix(imp, "net/http/") {
					t.Errorf("%s imports %s: the money core and its feeders know no HTTP", p.ImportPath, imp)
				}
			}
		}
		for _, r := range rules {
			if !under(p.ImportPath, r.from) {
				continue
			}
			for _, dep := range p.Deps {
				if under(dep, r.banned) {
					t.Errorf("%s links %s (go list -deps): %s", p.ImportPath, dep, r.why)
				}
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d packages matched the no-HTTP list: the rule checks nothing", checked)
	}
}
