package api

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/jsonhttp"
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
	// The Host is the listener's own loopback address, as any local
	// client sends it (the tokenless admin API refuses other hosts).
	req := "GET " + path + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(base, "http://") + "\r\nConnection: close\r\n"
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

// No path gets a 3xx on either listener, authenticated or not: every
// unclean path is 404 not_found with the contract's error body, before
// the mux could redirect it toward a cleaned path.
func TestUncleanPathsAre404(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("X1", 100, 5)
	unclean := []string{
		"/v1/../admin/v1/status", "/v1/items/../../etc", "/../admin/v1/status", "//v1/items/X1",
		"/v1/items//X1", "/v1/items/X1/", "/v1/./items/X1", "/./healthz", "/v1/items/%2e%2e/X1",
		"/v1/items/a%2FX1", "/v1/items/a%2fX1", "/v1/items/a%5cX1", "/admin/v1/../../healthz",
		"/admin/v1//status", "/admin/v1/items/X1/../../status", "/healthz/", "/metrics/.",
	}
	listeners := []struct {
		name, base, auth string
	}{
		{"terminal with key", e.term.URL, e.keys["T01"]},
		{"terminal without key", e.term.URL, ""},
		{"admin", e.adminSrv.URL, ""},
	}
	for _, l := range listeners {
		for _, p := range unclean {
			t.Run(l.name+" "+p, func(t *testing.T) {
				res, body := rawGet(t, l.base, p, l.auth)
				var eb jsonhttp.ErrorBody
				if res.StatusCode != http.StatusNotFound || json.Unmarshal(body, &eb) != nil || eb.Error.Code != "not_found" ||
					res.Header.Get("Location") != "" {
					t.Errorf("%d Location=%q %s, want 404 not_found", res.StatusCode, res.Header.Get("Location"), body)
				}
			})
		}
	}
	// The same handlers still answer clean paths.
	if res, body := rawGet(t, e.term.URL, "/v1/items/X1", e.keys["T01"]); res.StatusCode != http.StatusOK {
		t.Errorf("clean terminal path: %d %s", res.StatusCode, body)
	}
	if res, body := rawGet(t, e.adminSrv.URL, "/admin/v1/status", ""); res.StatusCode != http.StatusOK {
		t.Errorf("clean admin path: %d %s", res.StatusCode, body)
	}
}
