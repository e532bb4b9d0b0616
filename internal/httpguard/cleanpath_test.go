package httpguard

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestCleanPaths(t *testing.T) {
	cases := []struct {
		raw   string // as sent on the request line
		clean bool
	}{
		{"/", true},
		{"/healthz", true},
		{"/v1/items/4006381333931", true},
		{"/v1/items/a.b-c_d", true},
		{"/admin/v1/stats/daily?date=20260101", true},
		{"/v1/items/a%20b", true},
		{"/v1/../admin/v1/status", false},
		{"/v1/items/../../etc", false},
		{"/..", false},
		{"//v1/items/x", false},
		{"/v1//items/x", false},
		{"/v1/items/x/", false},
		{"/v1/./items/x", false},
		{"/.", false},
		{"/v1/items/%2e%2e/x", false},
		{"/v1/items/%2E", false},
		{"/v1/items/a%2Fb", false},
		{"/v1/items/a%2fb", false},
		{"/v1/items/a%5Cb", false},
		{`/v1/items/a\b`, false},
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := CleanPaths(next)
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			u, err := url.ParseRequestURI(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("GET", "http://x/", nil)
			r.URL = u
			r.RequestURI = tc.raw
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			switch {
			case tc.clean && w.Code != http.StatusTeapot:
				t.Errorf("clean path refused: %d %s", w.Code, w.Body)
			case !tc.clean && (w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), `"code":"not_found"`)):
				t.Errorf("unclean path: %d %s, want 404 not_found", w.Code, w.Body)
			}
		})
	}
}

// cleanBySplit is Clean as first written (a lowered copy, a slice of
// segments), kept as the oracle of the allocation-free one.
func cleanBySplit(path, escaped string) bool {
	if path == "/" {
		return true
	}
	if !strings.HasPrefix(path, "/") {
		return false
	}
	low := strings.ToLower(escaped)
	if strings.Contains(low, "%2f") || strings.Contains(low, "%5c") || strings.Contains(path, `\`) {
		return false
	}
	for _, seg := range strings.Split(path[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

func FuzzCleanAgreesWithSplit(f *testing.F) {
	for _, s := range []string{"/", "/v1/items/A", "/v1//x", "/v1/./x", "/v1/../x", "/v1/x/", "/a%2Fb", "/a%5cb", `/a\b`, "", "x", "/.", "/..", "/%2f"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, path, escaped string) {
		if got, want := Clean(path, escaped), cleanBySplit(path, escaped); got != want {
			t.Fatalf("Clean(%q, %q) = %v, the split version says %v", path, escaped, got, want)
		}
	})
}
