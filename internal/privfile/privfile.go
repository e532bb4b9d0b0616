package privfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Companions are the files SQLite keeps beside a database, which it
// creates with the database's mode but never changes once they exist.
var companions = []string{"", "-wal", "-shm"}

// Ensure creates an empty file at path with mode 0600 unless one exists
// (SQLite accepts an empty file as a new database, and gives its -wal
// and -shm files the database's mode), and takes every permission of
// group and others off path and its -wal and -shm files when they exist
// wider: a journal or database made by an older version, a backup
// copied around, a file created under a umask of 022 (issue 22 finding
// 9). It returns the files it tightened, for the caller to log.
func Ensure(path string) ([]string, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("create %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	var tightened []string
	for _, suffix := range companions {
		p := path + suffix
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return tightened, fmt.Errorf("check the mode of %s: %w", p, err)
		}
		if fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(p, fi.Mode().Perm()&^0o077); err != nil {
			return tightened, fmt.Errorf("make %s private (mode %v; chmod 600 it): %w", p, fi.Mode().Perm(), err)
		}
		tightened = append(tightened, p)
	}
	return tightened, nil
}
