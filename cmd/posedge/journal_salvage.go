package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/posedge/posedge/internal/privfile"
	"github.com/posedge/posedge/offline/journal"
)

// exitJournalDamaged is the exit code of `posedge run` (and `journal
// verify`) on a journal that fails its integrity check: sysexits'
// EX_DATAERR. The systemd unit lists it in RestartPreventExitStatus, so a
// damaged journal stops the service once instead of a restart loop.
const exitJournalDamaged = 65

// damagedJournal turns a journal.ErrDamaged into the one line the
// operator needs and the distinct exit code; other errors pass.
func damagedJournal(err error, configPath string) error {
	if !errors.Is(err, journal.ErrDamaged) {
		return err
	}
	cfg := ""
	if configPath != "" {
		cfg = " --config " + configPath
	}
	return &exitError{code: exitJournalDamaged, err: fmt.Errorf("%v — not serving on a damaged journal: stop the service and run `posedge journal salvage%s` (it keeps the damaged file)", err, cfg)}
}

// salvageJournal is `posedge journal salvage [--force] --config FILE`:
// every readable row of the damaged journal is copied into a new file,
// which takes the journal's place; the damaged file is kept beside it as
// <path>.damaged-<time>. A journal that passes its check is left alone
// unless --force. Run it with the daemon stopped (a damaged journal
// stops it).
func salvageJournal(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("posedge journal salvage", flag.ContinueOnError)
	cf := addConfigFlag(fs)
	force := fs.Bool("force", false, "salvage a journal that passes its integrity check too")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return &exitError{code: 2, err: fmt.Errorf("usage: posedge journal salvage [--force] --config FILE")}
	}
	cfg, err := cf.Load()
	if err != nil {
		return err
	}
	path := cfg.Journal.Path
	ro, err := journal.Open(ctx, path, journal.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	checkErr := ro.QuickCheck(ctx)
	ro.Close()
	switch {
	case checkErr == nil && !*force:
		return &exitError{code: 1, err: fmt.Errorf("journal %s passes its integrity check: nothing to salvage (--force copies it anyway)", path)}
	case checkErr != nil && !errors.Is(checkErr, journal.ErrDamaged):
		return checkErr
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	dest := path + ".salvaged-" + stamp
	rep, err := journal.Salvage(ctx, path, dest)
	if err != nil {
		return err
	}
	kept := path + ".damaged-" + stamp
	for _, sfx := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(path+sfx, kept+sfx); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("keep the damaged journal as %s: %w", kept+sfx, err)
		}
	}
	// The damaged copy holds every sale too: private, whatever the
	// journal's mode was (issue 22 finding 9).
	if _, err := privfile.Ensure(kept); err != nil {
		return fmt.Errorf("make the damaged journal %s private: %w", kept, err)
	}
	for _, sfx := range []string{"-wal", "-shm"} {
		_ = os.Remove(dest + sfx) // closed cleanly: nothing left in them
	}
	if err := os.Rename(dest, path); err != nil {
		return fmt.Errorf("put the salvaged journal %s in place of %s: %w", dest, path, err)
	}
	fmt.Fprintf(stdout, "salvaged %d transactions into %s (%d row ids unreadable); the damaged file is kept as %s\n",
		rep.Copied["txns"], path, rep.Unreadable["txns"], kept)
	fmt.Fprintln(stdout, "transactions HQ had acknowledged are at HQ; start posedge, then check `posedge status` and HQ's day manifests")
	return printJSON(stdout, rep)
}
