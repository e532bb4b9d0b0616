package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/offline/journal"
)

// journalCommand is `posedge journal stats|export|verify|backup DEST` and
// `posedge journal rebuild-counters --date YYYYMMDD`. The first four open
// the journal themselves, so they work while the daemon is down; backup is
// a consistent online copy while the daemon sells. rebuild-counters asks
// the running daemon to reconcile a day's Redis counters and the stock
// with the journal now (it also does so at start and after each day).
type journalCommand struct{}

func (c *journalCommand) Run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return &exitError{code: 2, err: fmt.Errorf("usage: posedge journal stats|export|verify|backup DEST|rebuild-counters [--date YYYYMMDD] --config FILE")}
	}
	sub := args[0]
	if sub == "rebuild-counters" {
		return rebuildCounters(ctx, args[1:], stdout)
	}
	if sub == "quarantine" {
		return journalQuarantine(ctx, args[1:], stdout)
	}
	fs := flag.NewFlagSet("posedge journal "+sub, flag.ContinueOnError)
	cf := addConfigFlag(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return &exitError{code: 2}
	}
	cfg, err := cf.Load()
	if err != nil {
		return err
	}
	j, err := journal.Open(ctx, cfg.Journal.Path, journal.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer j.Close()
	switch sub {
	case "stats":
		st, err := j.Stats(ctx)
		if err != nil {
			return err
		}
		return printJSON(stdout, st)
	case "verify":
		if err := j.Verify(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: integrity ok\n", cfg.Journal.Path)
		return nil
	case "export":
		return j.Export(ctx, stdout)
	case "backup":
		if fs.NArg() != 1 {
			return &exitError{code: 2, err: fmt.Errorf("usage: posedge journal backup DEST --config FILE")}
		}
		if err := j.Backup(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "journal copied to %s\n", fs.Arg(0))
		return nil
	}
	return &exitError{code: 2, err: fmt.Errorf("unknown journal command %q (stats, export, verify, backup, rebuild-counters)", sub)}
}

// rebuildCounters is `posedge journal rebuild-counters --date YYYYMMDD`:
// POST /admin/v1/reconcile on the running daemon, which corrects Redis's
// counters of that day and the stock from the journal under the store's
// reconciliation lock, and prints what it found. Exit 0 when Redis
// agreed or was corrected, 1 when the run could not happen.
func rebuildCounters(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("posedge journal rebuild-counters", flag.ContinueOnError)
	cf := addConfigFlag(fs)
	date := fs.String("date", "", "business day YYYYMMDD (default today in the store's timezone)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return &exitError{code: 2, err: fmt.Errorf("usage: posedge journal rebuild-counters [--date YYYYMMDD] --config FILE")}
	}
	if *date != "" {
		if !businessday.Valid(*date) {
			return &exitError{code: 2, err: fmt.Errorf("--date must be YYYYMMDD, got %q", *date)}
		}
	}
	cfg, err := cf.Load()
	if err != nil {
		return err
	}
	c, err := newAdminClient(cfg, 3*time.Minute)
	if err != nil {
		return err
	}
	path := "/admin/v1/reconcile"
	if *date != "" {
		path += "?date=" + url.QueryEscape(*date)
	}
	body, err := c.do(ctx, http.MethodPost, path)
	var ae *adminError
	switch {
	case errors.As(err, &ae):
		return err
	case err != nil:
		return fmt.Errorf("ask the daemon at %s to rebuild the counters (is posedge running? it also reconciles at start): %w", c.addr(), err)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("the daemon answered something that is not a report: %w", err)
	}
	return printJSON(stdout, v)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
