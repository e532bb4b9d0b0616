//go:build !windows

package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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

// SIGHUP reads the config again and serves the terminal API with its
// keys: a new till's key works, a removed one no longer does, and a
// keep-alive connection opened before stays open. A config that does
// not load keeps the keys in use.
func TestTerminalKeysReloadOnHUP(t *testing.T) {
	dir := t.TempDir()
	hash := func(key string) string { s := sha256.Sum256([]byte(key)); return hex.EncodeToString(s[:]) }
	path := filepath.Join(dir, "posedge.yaml")
	write := func(keyHash string) {
		os.WriteFile(path, []byte(`store_id: "S1"
listen: "127.0.0.1:18090"
redis: {addr: "127.0.0.1:1"}
journal: {path: "`+filepath.Join(dir, "j.db")+`"}
hq: {nats_url: "nats://127.0.0.1:1"}
terminals:
  - {id: "T01", key_sha256: "`+keyHash+`"}
`), 0o600)
	}
	write(hash("old-key-of-T01"))
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	termAPI := func(keys map[string]string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, key, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			if _, ok := keys[hash(key)]; !ok {
				w.WriteHeader(http.StatusUnauthorized)
			}
		})
	}
	s, err := newServers(&cfg, termAPI(cfg.TerminalKeys()), http.NotFoundHandler())
	if err != nil {
		t.Fatal(err)
	}
	s.terminals = termAPI
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go httpguard.Serve(s.term, ln)
	defer s.term.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &lockedBuffer{}
	s.reloadOnHUP(ctx, slog.New(slog.NewTextHandler(logs, nil)))

	var conns atomic.Int64
	kept := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
		conns.Add(1)
		return (&net.Dialer{}).DialContext(ctx, n, a)
	}}}
	status := func(c *http.Client, key string) int {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/v1/items/X", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if status(kept, "old-key-of-T01") != 200 || status(kept, "new-key-of-T01") != 401 {
		t.Fatal("keys before the reload")
	}
	os.WriteFile(path, []byte("store_id: [broken\n"), 0o600)
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	// The reload's own verdict, not a pause: once it logged that the file
	// does not load, the keys it kept are the ones to check.
	testenv.WaitFor(t, 5*time.Second, "the broken config's reload refused", func() bool {
		return strings.Contains(logs.String(), "SIGHUP: config not reloaded")
	})
	if status(kept, "old-key-of-T01") != 200 {
		t.Fatal("a config that does not load dropped the keys in use")
	}
	write(hash("new-key-of-T01"))
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	testenv.WaitFor(t, 5*time.Second, "new key accepted", func() bool { return status(kept, "new-key-of-T01") == 200 })
	if status(kept, "old-key-of-T01") != 401 {
		t.Error("the removed key still works")
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections dialled, want 1: the reload dropped the open one", n)
	}
}

// lockedBuffer is a log sink the reload goroutine writes while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
