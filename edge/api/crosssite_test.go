package api

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/posedge/posedge/internal/apispec"
)

// Finding 22.7: a page in a browser on the store box (or one that
// rebinds its DNS name to 127.0.0.1) drives the tokenless loopback admin
// API. Each attack is refused and changes nothing; the CLI's own
// requests (JSON bodies, no Origin) still work.
func TestCrossSiteAdminRequestsRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("X1", 100, 10)
	spec := loadSpec(t)
	raw := func(method, path, body string, hdr map[string]string) int {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, _ := http.NewRequest(method, e.adminSrv.URL+path, rd)
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
				continue
			}
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		// Each refusal is one docs/openapi.yaml describes (403
		// forbidden_origin, 415 unsupported_media_type).
		if _, problems := spec.CheckResponse(apispec.Admin, req, res, got); res.StatusCode >= 400 && len(problems) > 0 {
			t.Errorf("%s %s answered %d %s, not as docs/openapi.yaml says: %v", method, path, res.StatusCode, got, problems)
		}
		return res.StatusCode
	}
	evil := map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}
	plain := map[string]string{"Content-Type": "text/plain"}
	rebind := map[string]string{"Content-Type": "application/json", "Host": "evil.example:8081", "Origin": "http://evil.example:8081"}
	rebindNoOrigin := map[string]string{"Content-Type": "application/json", "Host": "evil.example:8081"}
	attacks := []struct {
		name, method, path, body string
		hdr                      map[string]string
	}{
		{"promo text/plain evil origin", "POST", "/admin/v1/promo", `{"coefficient":10}`, evil},
		{"promo text/plain", "POST", "/admin/v1/promo", `{"coefficient":10}`, plain},
		{"stock adjustment", "POST", "/admin/v1/items/X1/stock-adjustments", `{"delta":-5,"reason":"x"}`, evil},
		{"stock adjustment text/plain", "POST", "/admin/v1/items/X1/stock-adjustments", `{"delta":-5,"reason":"x"}`, plain},
		{"sync/now", "POST", "/admin/v1/sync/now", "", evil},
		{"sync/now form", "POST", "/admin/v1/sync/now", "a=b", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}},
		{"PUT by DNS rebinding", "PUT", "/admin/v1/items/X1", `{"price_cents":1,"stock":999}`, rebind},
		{"PUT by DNS rebinding, no Origin", "PUT", "/admin/v1/items/X1", `{"price_cents":1,"stock":999}`, rebindNoOrigin},
		{"read by DNS rebinding", "GET", "/admin/v1/stats/daily", "", rebindNoOrigin},
		{"null origin", "POST", "/admin/v1/sync/now", "", map[string]string{"Origin": "null"}},
		{"sec-fetch-site", "POST", "/admin/v1/sync/now", "", map[string]string{"Sec-Fetch-Site": "cross-site"}},
	}
	for _, a := range attacks {
		if got := raw(a.method, a.path, a.body, a.hdr); got != http.StatusForbidden && got != http.StatusUnsupportedMediaType {
			t.Errorf("%s: answered %d, want 403 or 415", a.name, got)
		}
	}
	if s := e.stock("X1"); s != 10 {
		t.Fatalf("stock after the attacks: %d, want 10", s)
	}
	if r := e.admin("GET", "/admin/v1/promo", nil); strings.Contains(string(r.body), `"coefficient":10`) {
		t.Fatalf("promo after the attacks: %s", r.body)
	}
	// What posedge's CLI sends: JSON bodies, body-less POSTs, no Origin;
	// a local browser page of the same loopback origin is let through too.
	if r := e.admin("POST", "/admin/v1/items/X1/stock-adjustments", `{"delta":-1,"reason":"count","idempotency_key":"cli-1"}`); r.status != 201 {
		t.Fatalf("CLI stock adjustment: %d %s", r.status, r.body)
	}
	if got := raw("POST", "/admin/v1/sync/now", "", nil); got != http.StatusAccepted {
		t.Fatalf("CLI sync/now: %d", got)
	}
	if got := raw("GET", "/admin/v1/status", "", map[string]string{"Host": "localhost:8081", "Origin": "http://127.0.0.1:8081"}); got != http.StatusOK {
		t.Fatalf("loopback origin status: %d", got)
	}
	if s := e.stock("X1"); s != 9 {
		t.Fatalf("stock after the CLI's adjustment: %d, want 9", s)
	}
}
