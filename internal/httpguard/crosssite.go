package httpguard

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// RefuseCrossSite guards a listener that asks for no token (the loopback
// admin API, contract §4) against the only other client that can reach
// loopback: a browser on the same box, driven by a foreign page. Such a
// page can send "simple" requests without a CORS preflight (text/plain
// bodies, forms, body-less POSTs) and, by DNS rebinding, even PUTs under
// its own host name. So, for every path but those open reports:
//   - a Host header that is not a loopback name or address is refused
//     (DNS rebinding: the browser names the attacker's host);
//   - an Origin header that is not loopback is refused (a browser sends
//     Origin on every cross-origin write), as is Sec-Fetch-Site cross-site;
//   - a write with a body must say Content-Type: application/json, which a
//     browser cannot send cross-origin without a preflight we never answer.
//
// The posedge CLI and curl send none of these headers, so local use
// stays tokenless. Refusals are 403 forbidden_origin or 415.
func RefuseCrossSite(open func(*http.Request) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if open != nil && open(r) {
			next.ServeHTTP(w, r)
			return
		}
		if !loopbackHost(r.Host) {
			WriteError(w, http.StatusForbidden, "forbidden_origin", "the tokenless admin API answers only requests addressed to a loopback host")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
			WriteError(w, http.StatusForbidden, "forbidden_origin", "cross-site requests are refused on the tokenless admin API")
			return
		}
		if strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") {
			WriteError(w, http.StatusForbidden, "forbidden_origin", "cross-site requests are refused on the tokenless admin API")
			return
		}
		if isWrite(r.Method) && hasBody(r) {
			mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" {
				WriteError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "a write needs Content-Type: application/json")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func isWrite(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 || len(r.TransferEncoding) > 0
}

func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return loopbackHost(u.Host)
}

// loopbackHost reports whether a Host header (host or host:port) names
// loopback: "localhost", 127.0.0.0/8 or ::1. An empty Host (HTTP/1.0)
// cannot come from a browser and passes.
func loopbackHost(h string) bool {
	if h == "" {
		return true
	}
	host := h
	if hh, _, err := net.SplitHostPort(h); err == nil {
		host = hh
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
