package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ratelimit"
)

func TestRateLimitHeaders(t *testing.T) {
	tests := []struct {
		name                      string
		d                         ratelimit.Decision
		policy, limit, retryAfter string
	}{
		{"contract example", ratelimit.Decision{Policy: "pay", Limit: 5, Window: 2 * time.Second, Remaining: 0, Reset: 2 * time.Second},
			`"pay";q=5;w=2`, `"pay";r=0;t=2`, "2"},
		{"allowed, no Retry-After", ratelimit.Decision{Allowed: true, Policy: "terminal", Limit: 100, Window: time.Second, Remaining: 42, Reset: 300 * time.Millisecond},
			`"terminal";q=100;w=1`, `"terminal";r=42;t=1`, ""},
		{"t and Retry-After round up", ratelimit.Decision{Policy: "refund", Limit: 3, Window: 5 * time.Second, Reset: 1001 * time.Millisecond},
			`"refund";q=3;w=5`, `"refund";r=0;t=2`, "2"},
		{"Retry-After at least 1", ratelimit.Decision{Policy: "scan", Limit: 20, Window: time.Second, Reset: 0},
			`"scan";q=20;w=1`, `"scan";r=0;t=0`, "1"},
		{"sub-millisecond reset", ratelimit.Decision{Policy: "store", Limit: 1000, Window: time.Second, Reset: time.Microsecond},
			`"store";q=1000;w=1`, `"store";r=0;t=1`, "1"},
		{"sub-second window shows w=1", ratelimit.Decision{Allowed: true, Policy: "scan", Limit: 5, Window: 500 * time.Millisecond, Remaining: 4, Reset: 500 * time.Millisecond},
			`"scan";q=5;w=1`, `"scan";r=4;t=1`, ""},
		{"long window, negative remaining clamped", ratelimit.Decision{Policy: "sync", Limit: 50, Window: time.Minute, Remaining: -3, Reset: 59500 * time.Millisecond},
			`"sync";q=50;w=60`, `"sync";r=0;t=60`, "60"},
		{"fallback limit", ratelimit.Decision{Allowed: true, Policy: "pay", Limit: 2, Window: 2 * time.Second, Remaining: 1, Reset: 2 * time.Second, Fallback: true},
			`"pay";q=2;w=2`, `"pay";r=1;t=2`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			writeRateLimitHeaders(h, tt.d)
			if got := h.Get("RateLimit-Policy"); got != tt.policy {
				t.Errorf("RateLimit-Policy %s, want %s", got, tt.policy)
			}
			if got := h.Get("RateLimit"); got != tt.limit {
				t.Errorf("RateLimit %s, want %s", got, tt.limit)
			}
			if got := h.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tt.retryAfter)
			}
		})
	}
}
