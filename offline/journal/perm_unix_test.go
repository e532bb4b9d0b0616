//go:build unix

package journal

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The journal, its WAL and a backup are created 0600 whatever the umask
// (issue 22 finding 9: 0644 before, readable by every local user outside
// the systemd unit's UMask).
func TestFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Append(ctx, sale(1)); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "copy.db")
	if err := j.Backup(ctx, dest); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", dest} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group or others", filepath.Base(f), m)
		}
	}
	if err := j.Backup(ctx, dest); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("a second backup to the same name: %v", err)
	}
	j.Close()

	// Files that exist wider — a journal of an older version, a backup
	// copied around and opened as a journal — are made private when
	// opened, -wal and -shm included (issue 22 finding 9: they stayed
	// 0644 before).
	for _, db := range []string{path, dest} {
		for _, f := range []string{db, db + "-wal", db + "-shm"} {
			if err := os.WriteFile(f, nil, 0o644); err != nil && !errors.Is(err, fs.ErrExist) {
				t.Fatal(err)
			}
		}
		for _, f := range []string{db, db + "-wal", db + "-shm"} {
			if err := os.Chmod(f, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		jj, err := Open(ctx, db, Options{})
		if err != nil {
			t.Fatal(err)
		}
		jj.Close()
		for _, f := range []string{db, db + "-wal", db + "-shm"} {
			fi, err := os.Stat(f)
			if errors.Is(err, fs.ErrNotExist) {
				continue // SQLite removed it at the clean close
			}
			if err != nil {
				t.Fatal(err)
			}
			if m := fi.Mode().Perm(); m&0o077 != 0 {
				t.Errorf("%s (0644 before) has mode %v after Open, want no access for group or others", filepath.Base(f), m)
			}
		}
	}
}
