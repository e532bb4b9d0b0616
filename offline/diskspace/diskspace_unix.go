//go:build !windows

package diskspace

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Free returns the bytes available to an unprivileged writer on the file
// system holding path (or its directory, when path does not exist yet).
func Free(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		if err2 := unix.Statfs(filepath.Dir(path), &st); err2 != nil {
			return 0, fmt.Errorf("free space of %s: %w", path, err)
		}
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
