package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/posedge/posedge/internal/listenaddr"
	"github.com/posedge/posedge/sync/hq"
)

// Exit statuses of `posedge-hq stores` (contract §7, Nagios plugin
// convention).
const (
	storesOK       = 0
	storesCritical = 1
	storesUnknown  = 3 // posedge-hq cannot be asked (its config included)
)

// exitError ends a command with a chosen status; msg, when set, goes to
// stderr.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// storesCommand is `posedge-hq stores`: the fleet view (GET /v1/stores)
// as a table, worst first, for an HQ engineer or a Nagios check.
type storesCommand struct {
	stdout io.Writer
	now    func() time.Time
}

func (c *storesCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("stores", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", hq.DefaultConfigPath, "config file")
	asJSON := fs.Bool("json", false, "print the fleet as JSON ({\"stores\": [...]}, worst first)")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for posedge-hq")
	if err := fs.Parse(args); err != nil {
		return &exitError{storesUnknown, "stores: " + err.Error()}
	}
	if fs.NArg() > 0 {
		return &exitError{storesUnknown, fmt.Sprintf("stores: unexpected argument %q", fs.Arg(0))}
	}
	cfg, err := hq.LoadConfig(*configPath)
	if err != nil {
		return &exitError{storesUnknown, fmt.Sprintf("UNKNOWN: cannot read the config, posedge-hq not asked:\n%v", err)}
	}
	es, err := askFleet(ctx, &cfg, *timeout)
	if err != nil {
		return &exitError{storesUnknown, fmt.Sprintf("UNKNOWN: posedge-hq cannot be asked (admin %s): %v (is posedge-hq running?)", cfg.AdminListen, err)}
	}
	lines := hq.JudgeFleet(es)
	if *asJSON {
		out := make([]hq.StoreEntry, len(lines))
		for i, l := range lines {
			out[i] = l.StoreEntry
		}
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"stores": out}); err != nil {
			return err
		}
	} else if err := hq.RenderFleet(c.stdout, lines, c.now()); err != nil {
		return err
	}
	if !hq.FleetOK(lines) {
		return &exitError{code: storesCritical}
	}
	return nil
}

// askFleet reads GET /v1/stores from the admin listener of cfg, with its
// token and, when admin.tls is set, trusting exactly its certificate (the
// command runs on the HQ box itself).
func askFleet(ctx context.Context, cfg *hq.Config, timeout time.Duration) ([]hq.StoreEntry, error) {
	host, err := listenaddr.Local(cfg.AdminListen)
	if err != nil {
		return nil, fmt.Errorf("admin.listen: %w", err)
	}
	client := &http.Client{Timeout: timeout}
	base := "http://" + host
	if cfg.AdminTLS.CertFile != "" {
		pem, err := os.ReadFile(cfg.AdminTLS.CertFile)
		if err != nil {
			return nil, fmt.Errorf("admin.tls.cert_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("admin.tls.cert_file %s: no PEM certificate in it", cfg.AdminTLS.CertFile)
		}
		base = "https://" + host
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	token, err := cfg.AdminToken()
	if err != nil {
		return nil, fmt.Errorf("admin.token_file: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/stores", nil)
	if err != nil {
		return nil, fmt.Errorf("GET /v1/stores: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read the answer to GET /v1/stores: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return nil, fmt.Errorf("GET /v1/stores answered %s: %s", res.Status, msg)
	}
	var v struct {
		Stores []hq.StoreEntry `json:"stores"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("the answer to GET /v1/stores is not the fleet: %w", err)
	}
	if v.Stores == nil {
		return nil, errors.New(`the answer to GET /v1/stores has no "stores"`)
	}
	return v.Stores, nil
}
