package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/posedge/posedge/offline/journal"
)

// syncCommand is `posedge sync now` and `posedge sync quarantine list|retry`.
type syncCommand struct{}

func (c *syncCommand) Run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return &exitError{code: 2, err: fmt.Errorf("usage: posedge sync now | manifest [--date YYYYMMDD] | quarantine list|retry [FLOW_NO...] --config FILE")}
	}
	sub := args[0]
	args = args[1:]
	qsub := ""
	if sub == "quarantine" {
		if len(args) == 0 {
			return &exitError{code: 2, err: fmt.Errorf("usage: posedge sync quarantine list|retry [FLOW_NO...]")}
		}
		qsub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("posedge sync", flag.ContinueOnError)
	cf := addConfigFlag(fs)
	date := fs.String("date", "", "business day YYYYMMDD for `sync manifest` (default today)")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	cfg, err := cf.Load()
	if err != nil {
		return err
	}
	switch {
	case sub == "now" || sub == "manifest":
		endpoint := "/admin/v1/sync/now"
		if sub == "manifest" {
			endpoint = "/admin/v1/sync/manifest?date=" + url.QueryEscape(*date)
		}
		c, err := newAdminClient(cfg, 15*time.Second)
		if err != nil {
			return err
		}
		body, err := c.do(ctx, http.MethodPost, endpoint)
		var ae *adminError
		switch {
		case errors.As(err, &ae):
			return err
		case err != nil:
			return fmt.Errorf("ask the daemon to sync (is posedge running?): %w", err)
		}
		fmt.Fprintln(stdout, strings.TrimSpace(string(body)))
		return nil
	case sub == "quarantine" && qsub == "list":
		j, err := journal.Open(ctx, cfg.Journal.Path, journal.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		defer j.Close()
		rows, err := j.Quarantined(ctx)
		if err != nil {
			return err
		}
		return printJSON(stdout, rows)
	case sub == "quarantine" && qsub == "retry":
		j, err := journal.Open(ctx, cfg.Journal.Path, journal.Options{})
		if err != nil {
			return err
		}
		defer j.Close()
		n, err := j.RetryQuarantined(ctx, fs.Args()...)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d transactions back in the outbox\n", n)
		return nil
	}
	return &exitError{code: 2, err: fmt.Errorf("unknown sync command %q", strings.TrimSpace(sub+" "+qsub))}
}
