package hq_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
)

// posedge-hq's admin listener with admin.token_file and admin.tls: TLS
// 1.2+ only (plain HTTP and TLS 1.1 refused), the token required on
// every path but /healthz, and after 10 failed authentications from an
// address, 429 for it.
func TestServerAdminTokenAndTLS(t *testing.T) {
	n := testenv.StartNATS(t)
	dir := t.TempDir()
	cfg := testConfig(n.URL(), "sqlite://"+filepath.Join(dir, "hq.db"))
	cfg.AdminListen = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cfg.AdminTLS.CertFile, cfg.AdminTLS.KeyFile = testenv.SelfSignedCert(t, dir, "hq-admin")
	token := strings.Repeat("k", 24) + "-hq-admin-token"
	cfg.AdminTokenFile = filepath.Join(dir, "admin.token")
	os.WriteFile(cfg.AdminTokenFile, []byte(token+"\n"), 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hq.NewServer(cfg, testLogger(t), "test").Run(ctx) }()
	defer func() { cancel(); <-done }()

	pem, _ := os.ReadFile(cfg.AdminTLS.CertFile)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	client := func(maxVersion uint16) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, MaxVersion: maxVersion}}}
	}
	base := "https://" + cfg.AdminListen
	get := func(c *http.Client, path, auth string) (int, http.Header) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, res.Header
	}
	good := client(0)
	testenv.WaitFor(t, 30*time.Second, "admin listener up", func() bool {
		res, err := good.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil
	})

	if code, _ := get(good, "/healthz", ""); code == http.StatusUnauthorized {
		t.Errorf("/healthz needs a token: %d", code)
	}
	// The catalog's routes are behind the same token (a GET of an entry
	// is 405 once authenticated, never served without it).
	for _, p := range []string{"/readyz", "/metrics", "/v1/completeness", "/v1/stores/S1/watermark", "/admin/v1/catalog/A1"} {
		if code, _ := get(good, p, ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d, want 401", p, code)
		}
		if code, _ := get(good, p, token); code == http.StatusUnauthorized {
			t.Errorf("GET %s with token: %d", p, code)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, base+"/admin/v1/catalog/A1", strings.NewReader(`{"name":"Tea","price_cents":250}`))
	req.Header.Set("Authorization", "Bearer "+token)
	if res, err := good.Do(req); err != nil {
		t.Fatalf("PUT catalog entry: %v", err)
	} else {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("PUT catalog entry with token: %d %s, want 200", res.StatusCode, body)
		}
	}
	for _, p := range []string{"/v1/../metrics", "/admin/v1/catalog/../../../metrics", "/admin/v1/catalog//A1"} {
		if code, _ := get(good, p, token); code != http.StatusNotFound {
			t.Errorf("unclean path %s: %d, want 404", p, code)
		}
	}

	// Plain HTTP gets no answer from the API; TLS 1.1 no handshake.
	if res, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + cfg.AdminListen + "/metrics"); err == nil {
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode == http.StatusOK || strings.Contains(string(body), "posedge") {
			t.Errorf("plain HTTP answered %d %s", res.StatusCode, body)
		}
	}
	if _, err := client(tls.VersionTLS11).Get(base + "/healthz"); err == nil {
		t.Error("TLS 1.1 handshake accepted")
	}

	// The five requests without a token above failed already; five more
	// make ten, and the next is refused even with the token.
	for i := range 5 {
		if code, _ := get(good, "/metrics", fmt.Sprintf("wrong-%d", i)); code != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i, code)
		}
	}
	code, h := get(good, "/metrics", token)
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Errorf("after 10 failures: %d Retry-After=%q, want 429 with Retry-After", code, h.Get("Retry-After"))
	}
}

// A started posedge-hq creates the catalog bucket before any price is
// written, so stores watch it from their first start instead of
// retrying "bucket not found" until HQ's first change.
func TestServerCreatesTheCatalogBucketAtStart(t *testing.T) {
	n := testenv.StartNATS(t)
	dir := t.TempDir()
	cfg := testConfig(n.URL(), "sqlite://"+filepath.Join(dir, "hq.db"))
	cfg.AdminListen = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hq.NewServer(cfg, testLogger(t), "test").Run(ctx) }()
	defer func() { cancel(); <-done }()

	nc, err := nats.Connect(n.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	testenv.WaitFor(t, 30*time.Second, "catalog bucket "+cfg.CatalogBucket+" created by posedge-hq", func() bool {
		_, last = js.KeyValue(context.Background(), cfg.CatalogBucket)
		return last == nil
	})
}
