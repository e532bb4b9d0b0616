package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// journalQuarantine is `posedge journal quarantine list|retry [FLOW_NO...]`:
// the transactions Redis refused to apply for a reason other than an
// outage, set aside so they block nothing (`posedge status` warns with
// their flow numbers). list shows them with the reasons; retry, once the
// cause is fixed, puts them (all, or those named) back for the running
// daemon to apply. Beside `posedge sync quarantine`, which is HQ's refusals.
func journalQuarantine(ctx context.Context, args []string, stdout io.Writer) error {
	const use = "usage: posedge journal quarantine list|retry [FLOW_NO...] --config FILE"
	if len(args) == 0 || (args[0] != "list" && args[0] != "retry") {
		return &exitError{code: 2, err: errors.New(use)}
	}
	sub := args[0]
	fs := flag.NewFlagSet("posedge journal quarantine "+sub, flag.ContinueOnError)
	cf := addConfigFlag(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return &exitError{code: 2, err: errors.New(use)}
	}
	if sub == "list" && fs.NArg() > 0 {
		return &exitError{code: 2, err: errors.New(use)}
	}
	cfg, err := cf.Load()
	if err != nil {
		return err
	}
	ac, err := newAdminClient(cfg, 15*time.Second)
	if err != nil {
		return err
	}
	var out []byte
	if sub == "retry" {
		flows := fs.Args()
		if flows == nil {
			flows = []string{}
		}
		body, _ := json.Marshal(map[string][]string{"flow_nos": flows})
		out, err = ac.send(ctx, http.MethodPost, "/admin/v1/journal/quarantine/retry", body)
	} else {
		out, err = ac.do(ctx, http.MethodGet, "/admin/v1/journal/quarantine")
	}
	if err != nil {
		return fmt.Errorf("ask the daemon at %s (is posedge running?): %w", ac.addr(), err)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return fmt.Errorf("the daemon answered something that is not JSON: %w", err)
	}
	return printJSON(stdout, v)
}
