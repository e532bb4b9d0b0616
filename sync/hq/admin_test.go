package hq_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
)

// rawGet sends the request line exactly as given (no client cleans or
// escapes it) and reads the one answer, redirects not followed.
func rawGet(t *testing.T, base, path, auth string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET " + path + " HTTP/1.1\r\nHost: posedge-hq\r\nConnection: close\r\n"
	if auth != "" {
		req += "Authorization: Bearer " + auth + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// posedge-hq's admin API answers unclean paths 404 not_found, never 3xx.
func TestAdminUncleanPathsAre404(t *testing.T) {
	n := testenv.StartNATS(t)
	cfg := testConfig(n.URL(), "sqlite://"+t.TempDir()+"/hq.db")
	h := startReceiver(t, cfg, "hq")
	admin := httptest.NewServer(hq.NewAdminHandler(h.store, h.recv, h.metrics, testLogger(t)))
	defer admin.Close()
	for _, p := range []string{"/v1/../metrics", "/v1/stores/../../etc", "//v1/completeness", "/v1/stores/S1%2F..%2Fx/watermark",
		"/v1/stores/S1//watermark", "/./healthz", "/healthz/", "/v1/stores/%2e%2e/watermark", "/v1/completeness/."} {
		res, body := rawGet(t, admin.URL, p, "")
		var eb struct {
			Error struct{ Code string } `json:"error"`
		}
		if res.StatusCode != http.StatusNotFound || json.Unmarshal(body, &eb) != nil || eb.Error.Code != "not_found" {
			t.Errorf("GET %s: %d Location=%q %s, want 404 not_found", p, res.StatusCode, res.Header.Get("Location"), body)
		}
	}
	if res, body := rawGet(t, admin.URL, "/v1/stores/S1/watermark", ""); res.StatusCode != http.StatusOK {
		t.Errorf("clean path: %d %s", res.StatusCode, body)
	}
}
