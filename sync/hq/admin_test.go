package hq_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/internal/testenv/rawhttp"
	"github.com/posedge/posedge/sync/hq"
)

// posedge-hq's admin API answers unclean paths 404 not_found, never 3xx.
func TestAdminUncleanPathsAre404(t *testing.T) {
	n := testenv.StartNATS(t)
	cfg := testConfig(n.URL(), "sqlite://"+t.TempDir()+"/hq.db")
	h := startReceiver(t, cfg, "hq")
	admin := httptest.NewServer(hq.NewAdminHandler(h.store, h.recv, h.metrics, testLogger(t)))
	defer admin.Close()
	for _, p := range []string{"/v1/../metrics", "/v1/stores/../../etc", "//v1/completeness", "/v1/stores/S1%2F..%2Fx/watermark",
		"/v1/stores/S1//watermark", "/./healthz", "/healthz/", "/v1/stores/%2e%2e/watermark", "/v1/completeness/."} {
		res, body := rawhttp.Get(t, admin.URL, p, "posedge-hq", "")
		var eb struct {
			Error struct{ Code string } `json:"error"`
		}
		if res.StatusCode != http.StatusNotFound || json.Unmarshal(body, &eb) != nil || eb.Error.Code != "not_found" {
			t.Errorf("GET %s: %d Location=%q %s, want 404 not_found", p, res.StatusCode, res.Header.Get("Location"), body)
		}
	}
	if res, body := rawhttp.Get(t, admin.URL, "/v1/stores/S1/watermark", "posedge-hq", ""); res.StatusCode != http.StatusOK {
		t.Errorf("clean path: %d %s", res.StatusCode, body)
	}
}
