package ratelimit

import (
	"strconv"
	"time"
)

// PolicyField and LimitField are the values of the structured-field
// headers of the IETF httpapi draft "RateLimit header fields for HTTP"
// (-08) for a decision's tightest level, e.g.
//
//	RateLimit-Policy: "pay";q=5;w=2
//	RateLimit: "pay";r=0;t=2
//
// w is the window in whole seconds (rounded up, at least 1), t the seconds
// until a slot frees (rounded up, at least 0). Writing them on an answer
// is the HTTP layer's job (edge/api).
func (d Decision) PolicyField() string {
	return `"` + d.Policy + `";q=` + strconv.Itoa(d.Limit) + ";w=" + strconv.FormatInt(max(ceilSeconds(d.Window), 1), 10)
}

// LimitField is the value of the RateLimit header.
func (d Decision) LimitField() string {
	return `"` + d.Policy + `";r=` + strconv.Itoa(max(d.Remaining, 0)) + ";t=" + strconv.FormatInt(max(ceilSeconds(d.Reset), 0), 10)
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
