package tillclient_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// The committed clients are what the pinned oapi-codegen makes of the
// descriptions today: a description change that breaks the generator, or
// that was not regenerated (go generate ./clients/...), fails here. The
// generator command is read from each package's go:generate line, so the
// pinned version lives in one place.
func TestCommittedClientsAreAFreshGeneration(t *testing.T) {
	gen := regexp.MustCompile(`(?m)^//go:generate go run (\S+@v[0-9.]+) -config oapi-codegen.yaml (\S+)$`)
	for _, pkg := range []string{".", "../hqclient"} {
		t.Run(filepath.Base(pkg), func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join(pkg, "doc.go"))
			if err != nil {
				t.Fatal(err)
			}
			m := gen.FindSubmatch(doc)
			if m == nil {
				t.Fatalf("%s/doc.go has no go:generate line running a pinned oapi-codegen", pkg)
			}
			cfg, err := os.ReadFile(filepath.Join(pkg, "oapi-codegen.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "client.gen.go")
			cfg = regexp.MustCompile(`(?m)^output: .*$`).ReplaceAll(cfg, []byte("output: "+out))
			tmpCfg := filepath.Join(t.TempDir(), "oapi-codegen.yaml")
			if err := os.WriteFile(tmpCfg, cfg, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("go", "run", string(m[1]), "-config", tmpCfg, string(m[2]))
			cmd.Dir = pkg
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", cmd, err, b)
			}
			fresh, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			committed, err := os.ReadFile(filepath.Join(pkg, "client.gen.go"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fresh, committed) {
				t.Errorf("%s/client.gen.go is not what %s makes of %s now: run go generate ./clients/... and commit", pkg, m[1], m[2])
			}
		})
	}
}
