package main

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/api"
	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/internal/testenv"
)

// serveAdmin serves the real admin API on a loopback listener of network
// ("tcp4" or "tcp6") bound to bind, and returns its address.
func serveAdmin(t *testing.T, network, bind, token string, status func(context.Context) any) string {
	t.Helper()
	ln, err := net.Listen(network, bind)
	if err != nil {
		t.Skipf("listen %s %s: %v", network, bind, err)
	}
	srv := &http.Server{Handler: api.NewAdmin(api.AdminDeps{Token: token, Status: status, Log: slog.New(slog.DiscardHandler),
		Ready: func(context.Context) error { return nil }})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// The one client every subcommand uses, against the real admin API: the
// token from admin.token_file, an unspecified listen address reached on
// loopback (IPv4 and IPv6), the contract's error body turned into an
// error with its code and message, a hung daemon cut by the timeout.
func TestAdminClient(t *testing.T) {
	dir := t.TempDir()
	token := strings.Repeat("t", 40)
	tokenFile := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrongFile := filepath.Join(dir, "wrong.token")
	if err := os.WriteFile(wrongFile, []byte(strings.Repeat("w", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	answer := func(context.Context) any { return map[string]string{"status": "ok"} }
	hang := func(ctx context.Context) any { <-ctx.Done(); return nil }
	addr4 := serveAdmin(t, "tcp4", "0.0.0.0:0", token, answer)
	_, port4, _ := net.SplitHostPort(addr4)
	hung := serveAdmin(t, "tcp4", "127.0.0.1:0", "", hang)

	cfgOf := func(listen, tokenFile string) *config.Config {
		c := &config.Config{}
		c.Admin.Listen, c.Admin.TokenFile = listen, tokenFile
		return c
	}
	cases := []struct {
		name    string
		cfg     *config.Config
		timeout time.Duration
		check   func(error) bool
	}{
		{"0.0.0.0 reached on loopback, token sent", cfgOf("0.0.0.0:"+port4, tokenFile), 3 * time.Second,
			func(err error) bool { return err == nil }},
		{"wrong token: the contract's error as an error", cfgOf("0.0.0.0:"+port4, wrongFile), 3 * time.Second, func(err error) bool {
			var ae *adminError
			return errors.As(err, &ae) && ae.Code == "unauthorized" && strings.HasPrefix(ae.Status, "401") &&
				strings.Contains(err.Error(), "the daemon answered 401 Unauthorized: unauthorized: admin token required")
		}},
		{"no token sent", cfgOf("0.0.0.0:"+port4, ""), 3 * time.Second, func(err error) bool {
			var ae *adminError
			return errors.As(err, &ae) && ae.Code == "unauthorized"
		}},
		{"unreadable token file is an error, not a request without it", cfgOf("0.0.0.0:"+port4, filepath.Join(dir, "missing")),
			3 * time.Second, func(err error) bool { return err != nil && strings.Contains(err.Error(), "admin.token_file") }},
		{"a hung daemon is cut by the timeout", cfgOf(hung, ""), 300 * time.Millisecond, func(err error) bool {
			var ne net.Error
			return errors.As(err, &ne) && ne.Timeout()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			var got map[string]string
			err := func() error {
				ac, err := newAdminClient(c.cfg, c.timeout)
				if err != nil {
					return err
				}
				return ac.getJSON(context.Background(), "/admin/v1/status", &got)
			}()
			if !c.check(err) {
				t.Fatalf("err %v, answer %v", err, got)
			}
			if err == nil && got["status"] != "ok" {
				t.Fatalf("answer %v", got)
			}
			if took := time.Since(start); took > c.timeout+2*time.Second {
				t.Fatalf("took %v with a timeout of %v", took, c.timeout)
			}
		})
	}

	t.Run("[::] reached on ::1", func(t *testing.T) {
		addr6 := serveAdmin(t, "tcp6", "[::]:0", "", answer)
		_, port6, _ := net.SplitHostPort(addr6)
		ac, err := newAdminClient(cfgOf("[::]:"+port6, ""), 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if ac.addr() != "[::1]:"+port6 {
			t.Fatalf("addr %s", ac.addr())
		}
		var got map[string]string
		if err := ac.getJSON(context.Background(), "/admin/v1/status", &got); err != nil || got["status"] != "ok" {
			t.Fatalf("%v %v", err, got)
		}
	})
}

// With admin.tls set, every subcommand speaks https to the admin listener
// and trusts exactly its certificate: another certificate is refused, and
// so is the listener reached over plain http.
func TestAdminClientOverTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := testenv.SelfSignedCert(t, dir, "admin")
	other, _ := testenv.SelfSignedCert(t, dir, "other")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api.NewAdmin(api.AdminDeps{Log: slog.New(slog.DiscardHandler),
		Status: func(context.Context) any { return map[string]string{"status": "ok"} },
		Ready:  func(context.Context) error { return nil }})}
	go func() { _ = srv.ServeTLS(ln, cert, key) }()
	t.Cleanup(func() { srv.Close() })

	ask := func(certFile string) (map[string]string, error) {
		c := &config.Config{}
		c.Admin.Listen, c.Admin.TLS.CertFile = ln.Addr().String(), certFile
		ac, err := newAdminClient(c, 3*time.Second)
		if err != nil {
			return nil, err
		}
		var got map[string]string
		return got, ac.getJSON(context.Background(), "/admin/v1/status", &got)
	}
	if got, err := ask(cert); err != nil || got["status"] != "ok" {
		t.Fatalf("https with the listener's certificate: %v %v", got, err)
	}
	var uae x509.UnknownAuthorityError
	if _, err := ask(other); !errors.As(err, &uae) {
		t.Fatalf("another certificate trusted: %v", err)
	}
	if _, err := ask(""); err == nil {
		t.Fatal("plain http to a TLS listener answered")
	}
}
