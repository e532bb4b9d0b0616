package ratelimit

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/internal/testenv/fakeclock"
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

// The local limiter mirrors the script: all levels or none, sliding.
func TestLocalLimiter(t *testing.T) {
	clk := fakeclock.New()
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

// The deadline of a decision on Redis has one default, redis.timeout in
// edge/config: a limiter built without one is refused, not given another.
func TestNewRequiresRedisTimeout(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New refuses first
	defer rdb.Close()
	c := testConfig()
	c.RedisTimeout = 0
	if _, err := New(rdb, c, nil, nil); err == nil || !strings.Contains(err.Error(), "RedisTimeout") {
		t.Fatalf("New without RedisTimeout: %v", err)
	}
}
