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

// No package is named util or common: a package names what it is.
func TestPackageNames(t *testing.T) {
	const mod = "github.com/posedge/posedge/"
	for _, p := range listPackages(t) {
		for _, seg := range strings.Split(strings.TrimPrefix(p.ImportPath, mod), "/") {
			if seg == "util" || seg == "utils" || seg == "common" {
				t.Errorf("%s: a package names what it is, never util or common", p.ImportPath)
			}
		}
	}
}
