package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posedge/posedge/internal/testenv/golden"
)

// What an operator reads from `posedge check-config` for good and bad
// files, as golden files (go test ./cmd/posedge -run TestCheckConfigGolden
// -update rewrites them): a change of wording or order shows in review.
func TestCheckConfigGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "checkconfig", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "..", "configs", "posedge.example.yaml"),
		filepath.Join("testdata", "checkconfig", "missing.yaml"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			// As main prints it: stdout, then "posedge: " and the error.
			var out, errb bytes.Buffer
			err := run(context.Background(), []string{"check-config", "--config", f}, &out, &errb)
			code := 0
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
				if ee.err != nil {
					fmt.Fprintln(&errb, "posedge:", ee.err)
				}
			} else if err != nil {
				t.Fatalf("check-config %s: %v", f, err)
			}
			got := fmt.Sprintf("exit %d\n%s%s", code, out.String(), errb.String())
			golden.Check(t, filepath.Join("testdata", "checkconfig", name+".golden"), []byte(got))
		})
	}
}
