//go:build unix

package hq_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/hqdb/sqlite"
)

// posedge-hq's SQLite database is created 0600 whatever the umask (issue
// 22 finding 9: 0644 before).
func TestSQLiteFileIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "hq.db")
	s, err := sqlite.Open(context.Background(), path, hqdb.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, f := range []string{path, path + "-wal"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group or others", filepath.Base(f), m)
		}
	}

	// A database that exists wider (an older posedge-hq, a restored
	// copy) is made private when opened, its -wal and -shm too (they
	// stayed 0644 before).
	old2 := filepath.Join(t.TempDir(), "restored.db")
	for _, f := range []string{old2, old2 + "-wal", old2 + "-shm"} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := sqlite.Open(context.Background(), old2, hqdb.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for _, f := range []string{old2, old2 + "-wal", old2 + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s (0644 before) has mode %v after Open, want no access for group or others", filepath.Base(f), m)
		}
	}
}
