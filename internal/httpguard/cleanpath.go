package httpguard

import (
	"net/http"
	"strings"

	"github.com/posedge/posedge/internal/jsonhttp"
)

// CleanPaths answers 404 not_found (the contract's error body) for a
// path that is not clean — "." or ".." segments, empty segments ("//",
// a trailing "/"), escaped slashes or backslashes — and passes every
// other request to next. http.ServeMux would answer such paths with a
// redirect to the cleaned path before any authentication runs, so that
// `/v1/../admin/v1/status` on the terminal port would point a client at
// the admin API; here nothing but 404 ever comes back.
func CleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Clean(r.URL.Path, r.URL.EscapedPath()) {
			WriteError(w, http.StatusNotFound, "not_found", "no such endpoint: the path is not clean")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Clean reports whether a request path (decoded, and as sent) is clean:
// "/" or "/"-separated non-empty segments, none "." or "..", no escaped
// "/" or "\".
func Clean(path, escaped string) bool {
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

// WriteError writes the contract's error body:
// {"error": {"code": "…", "message": "…"}}.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	jsonhttp.Error(w, status, code, msg)
}
