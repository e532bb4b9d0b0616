package ratelimit

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want []string // keys named in the error; none = valid
	}{
		{"contract defaults", func(c *Config) { *c = Config{StoreID: "S001"} }, nil},
		{"test config", func(*Config) {}, nil},
		{"sub-second window", func(c *Config) { c.Actions[ActionScan] = Policy{5, 500 * time.Millisecond} }, nil},
		{"bad store id", func(c *Config) { c.StoreID = "S{1}" }, []string{"store_id"}},
		{"empty store id", func(c *Config) { c.StoreID = "" }, []string{"store_id"}},
		{"store id too long", func(c *Config) { c.StoreID = strings.Repeat("s", 33) }, []string{"store_id"}},
		{"zero limit", func(c *Config) { c.Actions[ActionPay] = Policy{0, time.Second} }, []string{"limits.actions.pay.limit"}},
		{"negative window", func(c *Config) { c.Terminal = Policy{10, -time.Second} }, []string{"limits.terminal.window"}},
		{"window in µs", func(c *Config) { c.Store = Policy{10, 1500 * time.Microsecond} }, []string{"limits.store.window"}},
		{"huge limit", func(c *Config) { c.Store = Policy{MaxLimit + 1, time.Second} }, []string{"limits.store.limit"}},
		{"unknown action", func(c *Config) { c.Actions["void"] = Policy{1, time.Second} }, []string{"limits.actions.void"}},
		{"fraction above 1", func(c *Config) { c.FallbackFraction = 1.5 }, []string{"limits.fallback_fraction"}},
		{"negative fraction", func(c *Config) { c.FallbackFraction = -0.1 }, []string{"limits.fallback_fraction"}},
		{"NaN fraction", func(c *Config) { c.FallbackFraction = math.NaN() }, []string{"limits.fallback_fraction"}},
		{"negative timeout", func(c *Config) { c.RedisTimeout = -time.Second }, []string{"limits.redis_timeout"}},
		{"every problem at once", func(c *Config) {
			c.StoreID = "a:b"
			c.Actions[ActionRefund] = Policy{-1, 0}
			c.Actions["scna"] = Policy{1, time.Second}
			c.FallbackFraction = 2
		}, []string{"store_id", "limits.actions.refund.limit", "limits.actions.refund.window", "limits.actions.scna", "limits.fallback_fraction"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			tt.edit(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate accepted %+v", c)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is no *ConfigError", err)
			}
			for _, k := range tt.want {
				if !strings.Contains(err.Error(), k+":") {
					t.Errorf("error does not name %s:\n%v", k, err)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tt.want) {
				t.Errorf("%d problems reported, want %d:\n%v", n, len(tt.want), err)
			}
		})
	}
}

func TestFraction(t *testing.T) {
	tests := []struct {
		limit int
		f     float64
		want  int
	}{
		{100, 0.5, 50}, {5, 0.5, 2}, {3, 0.5, 1}, {1, 0.5, 1}, {100, 0.57, 57}, {1000, 0.29, 290},
		{20, 0.001, 1}, {100, 1, 100}, {100, 2.5, 250}, {100000, 10, 1000000},
	}
	for _, tt := range tests {
		if got := fraction(tt.limit, tt.f); got != tt.want {
			t.Errorf("fraction(%d, %v) = %d, want %d", tt.limit, tt.f, got, tt.want)
		}
	}
}

func TestWriteHeaders(t *testing.T) {
	tests := []struct {
		name                      string
		d                         Decision
		policy, limit, retryAfter string
	}{
		{"contract example", Decision{Policy: "pay", Limit: 5, Window: 2 * time.Second, Remaining: 0, Reset: 2 * time.Second},
			`"pay";q=5;w=2`, `"pay";r=0;t=2`, "2"},
		{"allowed, no Retry-After", Decision{Allowed: true, Policy: "terminal", Limit: 100, Window: time.Second, Remaining: 42, Reset: 300 * time.Millisecond},
			`"terminal";q=100;w=1`, `"terminal";r=42;t=1`, ""},
		{"t and Retry-After round up", Decision{Policy: "refund", Limit: 3, Window: 5 * time.Second, Reset: 1001 * time.Millisecond},
			`"refund";q=3;w=5`, `"refund";r=0;t=2`, "2"},
		{"Retry-After at least 1", Decision{Policy: "scan", Limit: 20, Window: time.Second, Reset: 0},
			`"scan";q=20;w=1`, `"scan";r=0;t=0`, "1"},
		{"sub-millisecond reset", Decision{Policy: "store", Limit: 1000, Window: time.Second, Reset: time.Microsecond},
			`"store";q=1000;w=1`, `"store";r=0;t=1`, "1"},
		{"sub-second window shows w=1", Decision{Allowed: true, Policy: "scan", Limit: 5, Window: 500 * time.Millisecond, Remaining: 4, Reset: 500 * time.Millisecond},
			`"scan";q=5;w=1`, `"scan";r=4;t=1`, ""},
		{"long window, negative remaining clamped", Decision{Policy: "sync", Limit: 50, Window: time.Minute, Remaining: -3, Reset: 59500 * time.Millisecond},
			`"sync";q=50;w=60`, `"sync";r=0;t=60`, "60"},
		{"fallback limit", Decision{Allowed: true, Policy: "pay", Limit: 2, Window: 2 * time.Second, Remaining: 1, Reset: 2 * time.Second, Fallback: true},
			`"pay";q=2;w=2`, `"pay";r=1;t=2`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			tt.d.WriteHeaders(h)
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

// The local limiter mirrors the script: all levels or none, sliding.
func TestLocalLimiter(t *testing.T) {
	clk := newFakeClock()
	ll := newLocalLimiter(time.Minute)
	lv := func(payLimit int) []level {
		return []level{
			{name: "store", key: "s", pol: Policy{1000, time.Minute}, fallback: 500},
			{name: "terminal", key: "t", pol: Policy{100, time.Minute}, fallback: 50},
			{name: "pay", key: "p", pol: Policy{4, 4 * time.Second}, fallback: payLimit},
		}
	}
	type want struct {
		allowed   bool
		policy    string
		remaining int
		reset     time.Duration
	}
	steps := []struct {
		advance time.Duration
		want    want
	}{
		{0, want{true, "pay", 1, 4 * time.Second}},
		{time.Second, want{true, "pay", 0, 3 * time.Second}},
		{time.Second, want{false, "pay", 0, 2 * time.Second}},
		{2 * time.Second, want{true, "pay", 0, time.Second}}, // the first hit left; one slot
		{0, want{false, "pay", 0, time.Second}},
		{time.Second, want{true, "pay", 0, 3 * time.Second}},
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		d, _ := ll.decide(clk.Now(), lv(2))
		got := want{d.Allowed, d.Policy, d.Remaining, d.Reset}
		if got != s.want || !d.Fallback || d.Limit != 2 {
			t.Fatalf("step %d: %+v, want %+v", i, d, s.want)
		}
	}
	if n := len(ll.logs["t"].hits); n != 4 {
		t.Fatalf("terminal level holds %d hits, want 4 (denied ones charged nowhere)", n)
	}
}
