package api

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/posedge/posedge/internal/jsonhttp"
	"github.com/posedge/posedge/internal/testenv/rawhttp"
)

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
				res, body := rawhttp.Get(t, l.base, p, "", l.auth)
				var eb jsonhttp.ErrorBody
				if res.StatusCode != http.StatusNotFound || json.Unmarshal(body, &eb) != nil || eb.Error.Code != "not_found" ||
					res.Header.Get("Location") != "" {
					t.Errorf("%d Location=%q %s, want 404 not_found", res.StatusCode, res.Header.Get("Location"), body)
				}
			})
		}
	}
	// The same handlers still answer clean paths.
	if res, body := rawhttp.Get(t, e.term.URL, "/v1/items/X1", "", e.keys["T01"]); res.StatusCode != http.StatusOK {
		t.Errorf("clean terminal path: %d %s", res.StatusCode, body)
	}
	if res, body := rawhttp.Get(t, e.adminSrv.URL, "/admin/v1/status", "", ""); res.StatusCode != http.StatusOK {
		t.Errorf("clean admin path: %d %s", res.StatusCode, body)
	}
}
