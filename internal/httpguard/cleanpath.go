package httpguard

import (
	"net"
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
	// Checked without building a lowered copy or a slice of segments:
	// this runs on every request (issue 26).
	if containsFold(escaped, "%2f") || containsFold(escaped, "%5c") || strings.Contains(path, `\`) {
		return false
	}
	for rest := path[1:]; ; {
		seg, more, found := strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		if !found {
			return true
		}
		rest = more
	}
}

// containsFold reports whether s contains sub (ASCII, sub lower case)
// in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// WriteError writes the contract's error body:
// {"error": {"code": "…", "message": "…"}}.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	jsonhttp.Error(w, status, code, msg)
}

// IsLoopback reports whether a listener's host:port is reachable from
// this machine only — where posedge and posedge-hq let an admin listener
// run without a token.
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
