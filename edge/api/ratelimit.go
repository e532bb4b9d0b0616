package api

import (
	"net/http"
	"strconv"

	"github.com/posedge/posedge/edge/ratelimit"
)

// writeRateLimitHeaders sets the structured-field headers of the IETF
// httpapi draft "RateLimit header fields for HTTP" (-08) for the
// decision's tightest level; a denied decision also gets Retry-After.
func writeRateLimitHeaders(h http.Header, d ratelimit.Decision) {
	h.Set("RateLimit-Policy", d.PolicyField())
	h.Set("RateLimit", d.LimitField())
	if !d.Allowed {
		h.Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(d.Reset)))
	}
}
