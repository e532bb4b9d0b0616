package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
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
		return &exitError{code: 2, err: fmt.Errorf(use)}
	}
	sub := args[0]
	fs := flag.NewFlagSet("posedge journal quarantine "+sub, flag.ContinueOnError)
	path := fs.String("config", "", "config file (default "+defaultConfigHint()+")")
	if err := fs.Parse(args[1:]); err != nil {
		return &exitError{code: 2, err: fmt.Errorf(use)}
	}
	if sub == "list" && fs.NArg() > 0 {
		return &exitError{code: 2, err: fmt.Errorf(use)}
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	host := cfg.Admin.Listen
	if strings.HasPrefix(host, "0.0.0.0:") {
		host = "127.0.0.1:" + strings.TrimPrefix(host, "0.0.0.0:")
	}
	method, u, body := http.MethodGet, "http://"+host+"/admin/v1/journal/quarantine", []byte(nil)
	if sub == "retry" {
		method, u = http.MethodPost, u+"/retry"
		flows := fs.Args()
		if flows == nil {
			flows = []string{}
		}
		body, _ = json.Marshal(map[string][]string{"flow_nos": flows})
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if cfg.Admin.TokenFile != "" {
		b, err := os.ReadFile(cfg.Admin.TokenFile)
		if err != nil {
			return fmt.Errorf("admin.token_file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("ask the daemon at %s (is posedge running?): %w", host, err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(out, &e)
		return fmt.Errorf("the daemon answered %s: %s %s", res.Status, e.Error.Code, e.Error.Message)
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return fmt.Errorf("the daemon answered something that is not JSON: %w", err)
	}
	return printJSON(stdout, v)
}
