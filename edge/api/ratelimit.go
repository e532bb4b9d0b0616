package api

import (
	"net/http"
	"strconv"

	"github.com/posedge/posedge/edge/ratelimit"
)

// writeRateLimitHeaders sets the structured-field headers of the IETF
// httpapi draft "RateLimit header fields for HTTP" (-08) for the
// decision's tightest level; a denied decision also gets Retry-After.
//
// The names are assigned in their canonical form, as Header.Set would
// send them, without canonicalising them on every request.
func writeRateLimitHeaders(h http.Header, d ratelimit.Decision) {
	h["Ratelimit-Policy"] = []string{d.PolicyField()}
	h["Ratelimit"] = []string{d.LimitField()}
	if !d.Allowed {
		h.Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(d.Reset)))
	}
}
