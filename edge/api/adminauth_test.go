package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The admin API with a token: /healthz open, everything else 401 without
// the token (an unclean path 404 once authenticated), and after 10
// failures from an address 429 with Retry-After even with the right one.
func TestAdminTokenAndFailureLimit(t *testing.T) {
	token := strings.Repeat("z", 40)
	srv := httptest.NewServer(NewAdmin(AdminDeps{Token: token, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Ready: func(context.Context) error { return nil }, Status: func(context.Context) any { return map[string]string{} },
		Metrics: http.NotFoundHandler()}))
	defer srv.Close()
	get := func(path, auth string) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if r := get("/healthz", ""); r.StatusCode != 200 {
		t.Errorf("/healthz: %d", r.StatusCode)
	}
	if r := get("/admin/v1/status", "Bearer "+token); r.StatusCode != 200 {
		t.Errorf("with token: %d", r.StatusCode)
	}
	if r := get("/admin/v1/status", "bearer "+token); r.StatusCode != 200 {
		t.Errorf("lower-case scheme: %d", r.StatusCode)
	}
	fails := []string{"", "Bearer", "Bearer " + token[:39], "Basic " + token, "Bearer " + token + "x"}
	for _, a := range fails {
		if r := get("/readyz", a); r.StatusCode != 401 {
			t.Errorf("auth %q: %d, want 401", a, r.StatusCode)
		}
	}
	for range 10 - len(fails) {
		get("/admin/v1/status", "Bearer nope")
	}
	if r := get("/admin/v1/status", "Bearer "+token); r.StatusCode != 429 || r.Header.Get("Retry-After") == "" {
		t.Errorf("after 10 failures: %d Retry-After %q, want 429", r.StatusCode, r.Header.Get("Retry-After"))
	}
}
