package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// NeedTool is the path of an outside checker (promtool, systemd-analyze,
// lintian…). make test installs it (scripts/test-deps.sh): missing is a
// failure naming the Debian package, never a silent skip.
func NeedTool(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: scripts/test-deps.sh (make test) installs the Debian package %s", name, pkg)
	}
	return p
}

// RunTool runs name with args and stdin (nil: none) and returns what it
// printed, stdout and stderr together, and how it exited.
func RunTool(stdin []byte, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ReadFile is the text of the file at p; a test that cannot read it fails.
func ReadFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
