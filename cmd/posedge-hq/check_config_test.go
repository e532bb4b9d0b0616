package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posedge/posedge/internal/testenv/golden"
)

// What an engineer reads from `posedge-hq check-config` for good and
// bad files, as golden files (go test ./cmd/posedge-hq -run
// TestCheckConfigGolden -update rewrites them).
func TestCheckConfigGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "checkconfig", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "..", "configs", "posedge-hq.example.yaml"),
		filepath.Join("testdata", "checkconfig", "missing.yaml"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runHQ(t, "check-config", "--config", f)
			golden.Check(t, filepath.Join("testdata", "checkconfig", name+".golden"), []byte(fmt.Sprintf("exit %d\n%s%s", code, stdout, stderr)))
		})
	}
}
