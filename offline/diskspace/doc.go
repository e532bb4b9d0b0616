// Package diskspace tells how many bytes are free for the journal on the
// file system holding a path (statfs on Unix, GetDiskFreeSpaceEx on Windows).
package diskspace
