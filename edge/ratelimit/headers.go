package ratelimit

import (
	"net/http"
	"strconv"
	"time"
)

// WriteHeaders sets the structured-field headers of the IETF httpapi
// draft "RateLimit header fields for HTTP" (-08) for the tightest level:
//
//	RateLimit-Policy: "pay";q=5;w=2
//	RateLimit: "pay";r=0;t=2
//
// w is the window in whole seconds (rounded up, at least 1), t the seconds
// until a slot frees (rounded up, at least 0); a denied decision also gets
// Retry-After in whole seconds, rounded up and at least 1.
func (d Decision) WriteHeaders(h http.Header) {
	name := `"` + d.Policy + `"`
	h.Set("RateLimit-Policy", name+";q="+strconv.Itoa(d.Limit)+";w="+strconv.FormatInt(max(ceilSeconds(d.Window), 1), 10))
	h.Set("RateLimit", name+";r="+strconv.Itoa(max(d.Remaining, 0))+";t="+strconv.FormatInt(max(ceilSeconds(d.Reset), 0), 10))
	if !d.Allowed {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds(d.Reset)))
	}
}

// RetryAfterSeconds is d as a Retry-After value: whole seconds, rounded
// up, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return int(max(ceilSeconds(d), 1))
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
