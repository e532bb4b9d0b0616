//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posedge/posedge/offline/journal"
)

// `posedge uninstall` refuses while sales are not at HQ, naming how many;
// once HQ has acknowledged them all (or with no journal) it goes on.
func TestUninstallRefusedWhileUnsynced(t *testing.T) {
	dir := t.TempDir()
	jp := filepath.Join(dir, "journal.db")
	cfg := writeConfig(t, dir, deadAddr(t), jp)
	if err := uninstallGuard(context.Background(), cfg); err != nil {
		t.Fatalf("no journal yet: %v", err)
	}
	buildJournal(t, jp, 9, 4)
	err := uninstallGuard(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "refusing to uninstall: 5 transactions") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("guard with 5 unsynced: %v", err)
	}
	if out, code := runCmd(t, "uninstall", "--config", cfg); code != 1 {
		t.Fatalf("uninstall with 5 unsynced: exit %d\n%s", code, out)
	}
	ackAll(t, jp, 9)
	if err := uninstallGuard(context.Background(), cfg); err != nil {
		t.Fatalf("every sale acknowledged: %v", err)
	}
}

func ackAll(t *testing.T, path string, n int) {
	t.Helper()
	j, err := journal.Open(context.Background(), path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var flows []string
	for i := 1; i <= n; i++ {
		flows = append(flows, fmt.Sprintf("1%015d", i))
	}
	if err := j.MarkAcked(context.Background(), flows...); err != nil {
		t.Fatal(err)
	}
}

// The package's preremove refuses a removal (not an upgrade) while sales
// are not at HQ, unless POSEDGE_FORCE_REMOVE=1; the real posedge binary
// reads the real journal.
func TestPackageRemovalRefusedWhileUnsynced(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "posedge")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	jp := filepath.Join(dir, "journal.db")
	cfg := writeConfig(t, dir, deadAddr(t), jp)
	buildJournal(t, jp, 6, 2)
	script, _ := filepath.Abs("../../packaging/nfpm/preremove.sh")
	prerm := func(arg string, env ...string) (string, int) {
		cmd := exec.Command("sh", script, arg)
		cmd.Env = append(os.Environ(), append([]string{"POSEDGE_BIN=" + bin, "POSEDGE_CONFIG=" + cfg}, env...)...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	for _, tc := range []struct {
		arg, env string
		code     int
		says     string
	}{
		{"remove", "", 1, "refusing to remove: 4 transactions"},
		{"0", "", 1, "(4 waiting, 0 quarantined"},
		{"upgrade", "", 0, ""},
		{"1", "", 0, ""},
		{"remove", "POSEDGE_FORCE_REMOVE=1", 0, ""},
	} {
		out, code := prerm(tc.arg, tc.env)
		if code != tc.code || !strings.Contains(out, tc.says) {
			t.Errorf("preremove %s %s: exit %d, want %d saying %q:\n%s", tc.arg, tc.env, code, tc.code, tc.says, out)
		}
	}
	ackAll(t, jp, 6)
	if out, code := prerm("remove"); code != 0 {
		t.Fatalf("preremove with everything at HQ: exit %d\n%s", code, out)
	}
}

// The package's postremove keeps the journal's folder on a remove (and
// an rpm erase, "0"), an upgrade and anything else; only a Debian purge
// deletes it.
func TestPackageRemovalKeepsTheJournalUnlessPurged(t *testing.T) {
	script, _ := filepath.Abs("../../packaging/nfpm/postremove.sh")
	// On a box with systemd the script reloads it: not this machine's.
	stub := t.TempDir()
	if err := os.WriteFile(filepath.Join(stub, "systemctl"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arg  string
		kept bool
	}{
		{"remove", true},
		{"0", true},
		{"upgrade", true},
		{"1", true},
		{"disappear", true},
		{"purge", false},
	} {
		state := filepath.Join(t.TempDir(), "posedge")
		if err := os.MkdirAll(state, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(state, "journal.db"), []byte("the only copy"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("sh", script, tc.arg)
		cmd.Env = append(os.Environ(), "POSEDGE_STATE="+state, "PATH="+stub+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("postremove %s: %v\n%s", tc.arg, err, out)
		}
		_, err := os.Stat(filepath.Join(state, "journal.db"))
		if kept := err == nil; kept != tc.kept {
			t.Errorf("postremove %s: journal kept %v, want %v (%v)", tc.arg, kept, tc.kept, err)
		}
	}
}
