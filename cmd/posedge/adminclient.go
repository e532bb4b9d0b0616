package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/internal/listenaddr"
)

// configFlag is the --config flag every subcommand takes: the file named,
// or the OS's default (contract §1: /etc/posedge/posedge.yaml, or
// %ProgramData%\posedge\posedge.yaml on Windows).
type configFlag struct{ named *string }

func addConfigFlag(fs *flag.FlagSet) configFlag {
	return configFlag{fs.String("config", "", "config file (default "+config.DefaultPath()+")")}
}

// Path is the config file to read.
func (c configFlag) Path() string {
	if *c.named == "" {
		return config.DefaultPath()
	}
	return *c.named
}

// Load reads and checks the config (see loadConfig).
func (c configFlag) Load() (*config.Config, error) { return loadConfig(c.Path()) }

// maxAdminAnswer bounds what is read of one admin answer (/metrics is the
// largest).
const maxAdminAnswer = 16 << 20

// adminClient is how every subcommand asks the running daemon: its admin
// listener (contract §4) with the admin token, each call bounded.
type adminClient struct {
	base    string // scheme://host:port
	token   string
	timeout time.Duration // of one call; the caller's ctx may end it sooner
	http    *http.Client
}

// newAdminClient is the client of cfg's admin listener. An admin token
// file that cannot be read is an error, not a request sent without it.
func newAdminClient(cfg *config.Config, timeout time.Duration) (*adminClient, error) {
	host, err := listenaddr.Local(cfg.Admin.Listen)
	if err != nil {
		return nil, fmt.Errorf("admin.listen: %w", err)
	}
	c := &adminClient{base: "http://" + host, timeout: timeout, http: &http.Client{}}
	tc, err := adminTLS(cfg)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		c.base = "https://" + host
		c.http.Transport = &http.Transport{TLSClientConfig: tc}
	}
	if c.token, err = cfg.AdminToken(); err != nil {
		return nil, fmt.Errorf("admin.token_file: %w", err)
	}
	return c, nil
}

// adminTLS is how to reach an admin listener with admin.tls set, nil
// while it speaks plain HTTP. The subcommands run on the store box itself
// and trust exactly the listener's own certificate (admin.tls.cert_file):
// no system CA is needed, and nothing else is trusted.
func adminTLS(cfg *config.Config) (*tls.Config, error) {
	if cfg.Admin.TLS.CertFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(cfg.Admin.TLS.CertFile)
	if err != nil {
		return nil, fmt.Errorf("admin.tls.cert_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("admin.tls.cert_file %s: no PEM certificate in it", cfg.Admin.TLS.CertFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// addr is the daemon's admin address, for messages.
func (c *adminClient) addr() string {
	_, a, _ := strings.Cut(c.base, "://")
	return a
}

// adminError is an answer other than 2xx, with the contract's error body
// ({"error": {"code", "message"}}) when the daemon sent one.
type adminError struct {
	Status  string // "409 Conflict"
	Code    string
	Message string
}

func (e *adminError) Error() string {
	switch {
	case e.Code != "":
		return fmt.Sprintf("the daemon answered %s: %s: %s", e.Status, e.Code, e.Message)
	case e.Message != "":
		return fmt.Sprintf("the daemon answered %s: %s", e.Status, e.Message)
	}
	return "the daemon answered " + e.Status
}

// do sends one request and returns the body of a 2xx answer. A transport
// error is returned as the client gave it (it names the method and the
// URL, and says whether it was a timeout); any other answer is an
// *adminError.
func (c *adminClient) do(ctx context.Context, method, path string) ([]byte, error) {
	return c.send(ctx, method, path, nil)
}

// send is do with a JSON request body (nil: none).
func (c *adminClient) send(ctx context.Context, method, path string, reqBody []byte) ([]byte, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var rd io.Reader
	if reqBody != nil {
		rd = bytes.NewReader(reqBody)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("admin request %s %s: %w", method, path, err)
	}
	if reqBody != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxAdminAnswer))
	if err != nil {
		return nil, fmt.Errorf("read the answer to %s %s: %w", method, path, err)
	}
	if res.StatusCode/100 != 2 {
		e := &adminError{Status: res.Status}
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
			e.Code, e.Message = eb.Error.Code, eb.Error.Message
		} else {
			e.Message = strings.TrimSpace(string(body))
			if len(e.Message) > 200 {
				e.Message = e.Message[:200] + "…"
			}
		}
		return nil, e
	}
	return body, nil
}

// getJSON decodes the JSON answer of GET path into v.
func (c *adminClient) getJSON(ctx context.Context, path string, v any) error {
	body, err := c.do(ctx, http.MethodGet, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the daemon's answer to GET %s is not what was asked for: %w", path, err)
	}
	return nil
}
