package e2e

import (
	"bytes"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posedge/posedge/internal/testenv"
)

// sh runs a command the test needs to succeed.
func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// loopFS loop-mounts the ext4 filesystem in an image file (made first,
// 64 MiB, when format) at a new directory; it is unmounted and detached
// at the end of the test.
func loopFS(t *testing.T, img string, format bool) string {
	t.Helper()
	if format {
		if err := os.WriteFile(img, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(img, 64<<20); err != nil {
			t.Fatal(err)
		}
	}
	dev := sh(t, "losetup", "-f", "--show", img)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	if format {
		sh(t, "mkfs.ext4", "-q", dev)
	}
	mnt := img + ".mnt"
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	sh(t, "mount", dev, mnt)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	return mnt
}

// unsyncedCommits makes a WAL database at path whose first commit (row -1)
// is fsynced (synchronous=FULL, as the journal's), then commits n rows
// one by one with synchronous=OFF, none fsynced; the caller closes it
// after the disk is copied.
func unsyncedCommits(t *testing.T, path string, n int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // the pragma below holds for this one connection
	for _, q := range []string{`CREATE TABLE rows (n INTEGER PRIMARY KEY)`, `INSERT INTO rows (n) VALUES (-1)`, `PRAGMA synchronous=OFF`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("control database: %s: %v", q, err)
		}
	}
	for i := range n {
		if _, err := db.Exec(`INSERT INTO rows (n) VALUES (?)`, i); err != nil {
			t.Fatalf("control database: %v", err)
		}
	}
	return db
}

// committedRows reads a copy of unsyncedCommits's database: whether its
// fsynced row is there and how many of the others.
func committedRows(t *testing.T, path string) (synced bool, unsynced int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(1000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var first int
	if err := db.QueryRow(`SELECT COUNT(*) FILTER (WHERE n = -1), COUNT(*) FILTER (WHERE n >= 0) FROM rows`).Scan(&first, &unsynced); err != nil {
		t.Fatalf("the copy of the control database: %v", err)
	}
	return first == 1, unsynced
}

// TestSaleSurvivesLossOfThePageCache: the journal lives on an ext4
// filesystem in a loop-mounted image; four tills sell the realistic mix
// on it (multi-line and token sales, refunds, batch uploads) until
// about 40 transactions are told. Right after the last 2xx the image
// is copied as the disk holds it: what the kernel has written to the
// loop device, without what still sits in the filesystem's page cache —
// a power cut. The copy, mounted (ext4 replays its own journal), must
// hold every transaction answered 2xx. A file written just before the copy
// without fsync must be missing from it: that proves the copy loses
// unsynced data, so the sales are in it because the journal fsynced them
// (synchronous=FULL), not by luck. So must the commits of a second SQLite
// database beside the journal, in WAL mode as the journal is, made with
// synchronous=OFF after one made with FULL (which must be there): the
// test would fail on a journal that did not fsync its commits. Needs root, losetup, mkfs.ext4 and
// mount (skipped with the reason otherwise; dm-flakey is not used: the
// kernel here has no device-mapper).
func TestSaleSurvivesLossOfThePageCache(t *testing.T) {
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the page-cache test needs a loop-mounted filesystem", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the page-cache test needs to loop-mount a filesystem")
	}
	// A container may be root without loop devices: skip with the reason
	// (losetup's own answer), as for want of root, instead of failing.
	if out, err := exec.Command("losetup", "-f").CombinedOutput(); err != nil {
		t.Skipf("no free loop device (losetup -f: %v: %s): the page-cache test needs one", err, strings.TrimSpace(string(out)))
	}
	dir := t.TempDir()
	mnt := loopFS(t, filepath.Join(dir, "disk.img"), true)
	s := startStore(t, testenv.StoreOptions{Limits: looseMix, JournalDir: mnt})
	putMixItems(s)
	told, mt := mixUntil(t, s, 4, "pagecache", testSeed(t), 40)
	t.Log(mt.summary())

	control := bytes.Repeat([]byte("not fsynced "), 1000)
	if err := os.WriteFile(filepath.Join(mnt, "control"), control, 0o644); err != nil {
		t.Fatal(err)
	}
	const unsynced = 50
	off := unsyncedCommits(t, filepath.Join(mnt, "off.db"), unsynced)
	snap := filepath.Join(dir, "snap.img")
	sh(t, "cp", "--sparse=always", filepath.Join(dir, "disk.img"), snap)
	s.Edge.Kill()

	off.Close()

	after := loopFS(t, snap, false)
	if b, err := os.ReadFile(filepath.Join(after, "control")); err == nil && bytes.Equal(b, control) {
		t.Fatal("the copy holds a file never fsynced: it did not lose the page cache, so it proves nothing")
	}
	synced, kept := committedRows(t, filepath.Join(after, "off.db"))
	t.Logf("beside the journal: the fsynced commit in the copy: %v; %d of %d commits made with synchronous=OFF", synced, kept, unsynced)
	if !synced {
		t.Fatal("the copy lacks a commit made with synchronous=FULL")
	}
	if kept == unsynced {
		t.Fatalf("all %d commits made with synchronous=OFF survived the copy: a journal that did not fsync would pass too", unsynced)
	}
	got := journalTxns(t, filepath.Join(after, "journal.db"))
	for _, tx := range told {
		if got[tx.FlowNo] != 1 {
			t.Errorf("%s %s (%s key %s) was answered 2xx but is in the journal %d times after the page cache was lost",
				tx.Kind, tx.FlowNo, tx.how, tx.key, got[tx.FlowNo])
		}
	}
	t.Logf("%d transactions answered, %d in the journal as the disk held it", len(told), len(got))
}
