package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// tmpfsDir mounts a tmpfs of size bytes at a new directory, unmounted
// with the test. Needs root: the caller skips with the reason otherwise.
func tmpfsDir(t *testing.T, size int64) string {
	t.Helper()
	dir := t.TempDir()
	mnt := filepath.Join(dir, "journal")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// fill writes path until the filesystem refuses with ENOSPC and returns
// how many bytes it took: the proof that the disk is really full.
func fill(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			return n
		}
		if err != nil {
			t.Fatalf("fill %s: %v", path, err)
		}
	}
}

// TestRealDiskFullUnderTheJournal: the journal (and its WAL) on a small
// tmpfs; while four tills sell the realistic mix, a file fills the
// filesystem until the kernel answers ENOSPC. Sales are then refused
// with 503 journal_unavailable (the tills see it), never acknowledged;
// the filler is deleted (a technician cleans the disk) and, without a
// restart, the tills' retries of the refused keys succeed and they sell
// on; the money audit (moneycheck over every request and answer) then
// holds every sale told, once. Needs root (mount): skipped
// with the reason otherwise; CI runs as root.
func TestRealDiskFullUnderTheJournal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the real-ENOSPC test mounts a tmpfs under the journal")
	}
	mnt := tmpfsDir(t, 32<<20)
	s := startStore(t, testenv.StoreOptions{Limits: looseMix, JournalDir: mnt})
	putMixItems(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tl := runMix(t, ctx, s, 4, "enospc", testSeed(t))
	testenv.WaitFor(t, 30*time.Second, "sales before the disk fills", func() bool { return len(tl.snapshot()) > 50 })

	filler := filepath.Join(mnt, "filler")
	took := fill(t, filler)
	// The tills keep retrying the same keys; count the refusals they get.
	refused := func() (n int, keys map[string]bool) {
		keys = map[string]bool{}
		for _, op := range tl.hist.Ops() {
			if op.Status == 503 && strings.Contains(string(op.Body), "journal_unavailable") {
				n++
				keys[op.Terminal+" "+op.Key] = true
			}
		}
		return n, keys
	}
	testenv.WaitForState(t, 20*time.Second, "sales refused 503 journal_unavailable on the full disk", func() (bool, string) {
		n, _ := refused()
		return n >= 4, fmt.Sprintf("%d refused", n)
	})
	told0 := len(tl.snapshot())
	n, keys := refused()
	t.Logf("disk full (ENOSPC after a %d-byte filler): %d refusals of %d keys, %d sales told so far", took, n, len(keys), told0)

	// Space returns, without a restart: the tills' retries go through.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "sales after the disk got room", func() bool { return len(tl.snapshot()) > told0+100 })
	cancel()
	got := tl.wait()
	t.Log(tl.summary())
	auditMix(t, s, got, s.Journal)
}
