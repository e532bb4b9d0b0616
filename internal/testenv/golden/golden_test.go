package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// A golden file that differs fails the test; an equal one passes.
func TestCheck(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.golden")
	if err := os.WriteFile(p, []byte("OK redis\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Check(t, p, []byte("OK redis\n"))
	var inner testing.T
	ft := &recorder{T: &inner}
	Check(ft, p, []byte("CRIT redis\n"))
	if !ft.failed {
		t.Error("a differing output passed")
	}
}

// recorder notes a failure instead of failing the outer test.
type recorder struct {
	*testing.T
	failed bool
}

func (r *recorder) Helper()                           {}
func (r *recorder) Errorf(format string, args ...any) { r.failed = true }
