//go:build !windows

package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/internal/httpguard"
	"github.com/posedge/posedge/internal/testenv"
)

// The admin listener with admin.tls: timeouts set, TLS 1.2+ only, plain
// HTTP refused; SIGHUP swaps the certificate for new handshakes while a
// connection opened before keeps working.
func TestAdminListenerTLSAndReload(t *testing.T) {
	dir := t.TempDir()
	var cfg config.Config
	cfg.Admin.TLS.CertFile, cfg.Admin.TLS.KeyFile = testenv.SelfSignedCert(t, dir, "admin")
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	s, err := newServers(&cfg, ok, ok)
	if err != nil {
		t.Fatal(err)
	}
	if s.term.TLSConfig != nil || s.admin.TLSConfig == nil || s.admin.TLSConfig.MinVersion != tls.VersionTLS12 ||
		s.admin.ReadHeaderTimeout == 0 || s.admin.ReadTimeout == 0 || s.admin.IdleTimeout == 0 {
		t.Fatalf("servers: term TLS %v, admin %+v", s.term.TLSConfig, s.admin)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go httpguard.Serve(s.admin, ln)
	defer s.admin.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.reloadOnHUP(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)))
	base := "https://" + ln.Addr().String()

	serial := func(c *http.Client) string {
		t.Helper()
		res, err := c.Get(base + "/x")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.TLS.PeerCertificates[0].SerialNumber.String()
	}
	insecure := func(maxV uint16) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MaxVersion: maxV}}}
	}
	if _, err := insecure(tls.VersionTLS11).Get(base + "/x"); err == nil {
		t.Error("TLS 1.1 accepted")
	}
	if res, err := http.Get("http://" + ln.Addr().String() + "/x"); err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(b) == "ok" {
			t.Error("plain HTTP served")
		}
	}
	kept := insecure(0)
	first := serial(kept)

	// New pair in the same files, then SIGHUP.
	certPEM, _ := os.ReadFile(cfg.Admin.TLS.CertFile)
	testenv.SelfSignedCert(t, dir, "admin")
	if newPEM, _ := os.ReadFile(cfg.Admin.TLS.CertFile); string(newPEM) == string(certPEM) {
		t.Fatal("certificate not replaced")
	}
	blk, _ := pem.Decode(mustRead(t, cfg.Admin.TLS.CertFile))
	want, _ := x509.ParseCertificate(blk.Bytes)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	testenv.WaitFor(t, 5*time.Second, "new certificate served", func() bool {
		return serial(insecure(0)) == want.SerialNumber.String()
	})
	if got := serial(kept); got != first {
		t.Errorf("the connection opened before the reload changed certificate: %s → %s", first, got)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
