package httpguard

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RequireBearer passes a request to next only with "Authorization:
// Bearer <token>", compared in constant time; paths for which open
// reports true pass without. An empty token requires nothing (a loopback
// listener without admin.token_file). Failed authentications count per
// source address in guard: once it blocks an address, every request from
// it is answered 429 with Retry-After until the window lets it go.
// Without a token, cross-site requests are refused (RefuseCrossSite).
func RequireBearer(token string, guard *AuthGuard, open func(*http.Request) bool, next http.Handler) http.Handler {
	if token == "" {
		return RefuseCrossSite(open, next)
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open != nil && open(r) {
			next.ServeHTTP(w, r)
			return
		}
		src := SourceAddr(r)
		if blocked, retry := guard.Blocked(src); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(retry)))
			WriteError(w, http.StatusTooManyRequests, "rate_limited", "too many failed authentications from this address; wait before retrying")
			return
		}
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			guard.Fail(src)
			w.Header().Set("WWW-Authenticate", `Bearer realm="posedge-admin"`)
			WriteError(w, http.StatusUnauthorized, "unauthorized", "admin token required (Authorization: Bearer <token>)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// SourceAddr is the client's IP address, without the port.
func SourceAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func retryAfterSeconds(d time.Duration) int {
	return max(int((d+time.Second-1)/time.Second), 1)
}
