package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the -update flag of every test binary that links this
// package (flags are registered once per binary, so a test package that
// uses golden files defines none of its own and reads Update).
var update = flag.Bool("update", false, "rewrite golden and generated files from the current output")

// Update reports whether the test binary runs with -update.
func Update() bool { return *update }

// Check compares got with the file at path; under -update it writes got
// there first (making its directory), so the diff shows in review.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (-update rewrites it):\n--- got\n%s--- want\n%s", path, got, want)
	}
}
