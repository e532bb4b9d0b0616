package diskspace

import (
	"path/filepath"
	"testing"
)

func TestFreeOfTempDirIsPositive(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{dir, filepath.Join(dir, "not-yet.db")} {
		n, err := Free(p)
		if err != nil || n <= 0 {
			t.Fatalf("Free(%s) = %d, %v", p, n, err)
		}
	}
}
