//go:build unix

package privfile

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// Ensure creates 0600 whatever the umask, and tightens an existing file
// and its companions that are wider; a private one, or a missing
// companion, is left alone.
func TestEnsure(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, c := range []struct {
		name  string
		exist map[string]os.FileMode // suffix → mode before
		want  []string               // suffixes tightened
	}{
		{"new", nil, nil},
		{"0644 with -wal 0644 and -shm 0666", map[string]os.FileMode{"": 0o644, "-wal": 0o644, "-shm": 0o666}, []string{"", "-wal", "-shm"}},
		{"0640", map[string]os.FileMode{"": 0o640}, []string{""}},
		{"already private, -wal readable", map[string]os.FileMode{"": 0o600, "-wal": 0o604}, []string{"-wal"}},
		{"0400 stays", map[string]os.FileMode{"": 0o400}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.db")
			for suffix, m := range c.exist {
				if err := os.WriteFile(path+suffix, []byte("x"), m); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path+suffix, m); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Ensure(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range c.want {
				want = append(want, path+s)
			}
			if !slices.Equal(got, want) {
				t.Errorf("tightened %v, want %v", got, want)
			}
			for _, suffix := range []string{"", "-wal", "-shm"} {
				fi, err := os.Stat(path + suffix)
				if err != nil {
					continue
				}
				m := fi.Mode().Perm()
				if m&0o077 != 0 {
					t.Errorf("%s has mode %v after Ensure", suffix, m)
				}
				if before, ok := c.exist[suffix]; ok && m != before&^0o077 {
					t.Errorf("%s has mode %v, want %v (the owner's bits kept)", suffix, m, before&^0o077)
				}
			}
		})
	}
}
