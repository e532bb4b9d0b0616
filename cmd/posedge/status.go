package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"time"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/edge/health"
	"github.com/posedge/posedge/edge/status"
	"github.com/posedge/posedge/offline/journal"
)

// statusCommand is `posedge status`: one screen for a technician, Nagios
// exit codes, --json for machines.
type statusCommand struct{}

func (c *statusCommand) Run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("posedge status", flag.ContinueOnError)
	cf := addConfigFlag(fs)
	asJSON := fs.Bool("json", false, "print the status object as JSON")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the daemon")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: status.ExitCode(status.Unknown)}
	}
	p := cf.Path()
	cfg, err := config.Load(p)
	if err != nil {
		return c.print(stdout, status.ConfigErrorReport(p, err.Error()), *asJSON)
	}
	platformPaths(&cfg)
	r, err := fetch(ctx, &cfg, *timeout)
	if err != nil {
		r = offlineReport(ctx, &cfg, err)
	}
	return c.print(stdout, r, *asJSON)
}

func (c *statusCommand) print(w io.Writer, r status.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := status.Render(w, r); err != nil {
		return err
	}
	if code := status.ExitCode(r.Status); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// fetch asks the running daemon over its admin listener.
func fetch(ctx context.Context, cfg *config.Config, timeout time.Duration) (status.Report, error) {
	var r status.Report
	c, err := newAdminClient(cfg, timeout)
	if err != nil {
		return r, err
	}
	err = c.getJSON(ctx, "/admin/v1/status", &r)
	return r, err
}

// offlineReport is CRIT (the daemon does not answer) with what the journal
// file, opened read-only, still tells.
func offlineReport(ctx context.Context, cfg *config.Config, cause error) status.Report {
	msg := cause.Error()
	var ne interface{ Timeout() bool }
	if errors.As(cause, &ne) && ne.Timeout() {
		msg = "timed out"
	}
	f := status.Facts{Now: time.Now(), DaemonUp: false, DaemonError: msg + " (admin " + cfg.Admin.Listen + ")", StoreID: cfg.StoreID,
		Plaintext: cfg.PlaintextWarnings()}
	j, err := journal.Open(ctx, cfg.Journal.Path, journal.Options{ReadOnly: true})
	if err != nil {
		f.Journal = health.Journal{Path: cfg.Journal.Path, Error: err.Error()}
	} else {
		// The daemon is down: a damaged journal is the first suspect (it
		// refuses to serve on one), so look before reading figures from it.
		if cerr := j.QuickCheck(ctx); errors.Is(cerr, journal.ErrDamaged) {
			f.Journal = health.Journal{Path: cfg.Journal.Path, Error: cerr.Error(), Damaged: true}
		} else {
			f.Journal, f.HQ = health.ReadJournal(ctx, j, f.HQ)
			f.Catalog = health.ReadCatalog(ctx, j)
		}
		j.Close()
	}
	return status.Evaluate(f, status.ThresholdsOf(cfg))
}
