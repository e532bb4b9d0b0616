package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
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
	path := fs.String("config", "", "config file (default "+defaultConfigHint()+")")
	date := fs.String("date", "", "business day YYYYMMDD for `sync manifest` (default today)")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		return err
	}
	switch {
	case sub == "now" || sub == "manifest":
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		endpoint := "/admin/v1/sync/now"
		if sub == "manifest" {
			endpoint = "/admin/v1/sync/manifest?date=" + url.QueryEscape(*date)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+cfg.Admin.Listen+endpoint, nil)
		if cfg.Admin.TokenFile != "" {
			if b, err := os.ReadFile(cfg.Admin.TokenFile); err == nil {
				req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
			}
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("ask the daemon to sync (is posedge running?): %w", err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode/100 != 2 {
			return fmt.Errorf("the daemon answered %s: %s", res.Status, strings.TrimSpace(string(body)))
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
