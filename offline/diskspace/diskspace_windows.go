//go:build windows

package diskspace

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// Free returns the bytes available to the caller on the volume holding path.
func Free(path string) (int64, error) {
	dir := filepath.Dir(path)
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, fmt.Errorf("free space of %s: %w", path, err)
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", path, err)
	}
	return int64(avail), nil
}
