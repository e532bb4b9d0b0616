package ratelimit

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Action names the terminal API limits per terminal (contract §3).
const (
	ActionScan   = "scan"
	ActionPay    = "pay"
	ActionRefund = "refund"
	ActionSync   = "sync"
)

// Actions lists the known action names in a fixed order.
func Actions() []string { return []string{ActionScan, ActionPay, ActionRefund, ActionSync} }

func knownAction(a string) bool {
	switch a {
	case ActionScan, ActionPay, ActionRefund, ActionSync:
		return true
	}
	return false
}

// Bounds of a policy. A hit log holds at most its (scaled) limit of
// members, so MaxLimit × the largest coefficient (10) bounds one key.
const (
	MaxLimit  = 100000
	MaxWindow = 24 * time.Hour
)

// DefaultFallbackFraction is the share of each unscaled limit the local
// limiter allows while Redis is unavailable.
const DefaultFallbackFraction = 0.5

// Policy is one sliding window: at most Limit requests in any Window.
type Policy struct {
	Limit  int
	Window time.Duration
}

func (p Policy) zero() bool { return p.Limit == 0 && p.Window == 0 }

// Config is the limiter's part of the daemon configuration (`limits:`).
type Config struct {
	StoreID          string
	Store, Terminal  Policy
	Actions          map[string]Policy // scan, pay, refund, sync
	FallbackFraction float64           // (0,1]
	// RedisTimeout is the deadline of one decision on Redis; required
	// (New refuses 0): the daemon passes redis.timeout, whose default
	// edge/config owns.
	RedisTimeout time.Duration

	// Now is the clock of the local fallback limiter and of the hold after
	// Redis returns; nil means time.Now. Decisions on Redis use Redis TIME.
	Now func() time.Time
}

// DefaultPolicies are the contract's limits: the one source of the
// defaults of posedge.yaml's limits (edge/config takes them from here).
func DefaultPolicies() (store, terminal Policy, actions map[string]Policy) {
	return Policy{1000, time.Second}, Policy{100, time.Second}, map[string]Policy{
		ActionScan:   {20, time.Second},
		ActionPay:    {5, 2 * time.Second},
		ActionRefund: {3, 5 * time.Second},
		ActionSync:   {50, 60 * time.Second},
	}
}

// WithDefaults returns c with every unset part filled from the contract's
// defaults: a Policy left at its zero value, a missing action,
// FallbackFraction 0 (0.5) and Now nil (time.Now). RedisTimeout has no
// default here (see Config).
// The Actions map of c is not modified.
func (c Config) WithDefaults() Config {
	ds, dt, da := DefaultPolicies()
	if c.Store.zero() {
		c.Store = ds
	}
	if c.Terminal.zero() {
		c.Terminal = dt
	}
	acts := make(map[string]Policy, len(da))
	for k, v := range c.Actions {
		acts[k] = v
	}
	for k, v := range da {
		if p, ok := acts[k]; !ok || p.zero() {
			acts[k] = v
		}
	}
	c.Actions = acts
	if c.FallbackFraction == 0 {
		c.FallbackFraction = DefaultFallbackFraction
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// ConfigError is one problem of a Config, naming the configuration key.
type ConfigError struct {
	Key   string // e.g. "limits.actions.pay.limit"
	Value any
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s: %v (got %v)", e.Key, e.Err, e.Value)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Validate reports every problem of c (after WithDefaults) at once, joined
// with errors.Join, each a *ConfigError naming its key.
func (c Config) Validate() error {
	var errs []error
	bad := func(key string, v any, format string, args ...any) {
		errs = append(errs, &ConfigError{Key: key, Value: v, Err: fmt.Errorf(format, args...)})
	}
	if !validID(c.StoreID) {
		bad("store_id", fmt.Sprintf("%q", c.StoreID), "must match [A-Za-z0-9_-]{1,32}")
	}
	d := c.WithDefaults()
	checkPolicy := func(key string, p Policy) {
		if p.Limit < 1 || p.Limit > MaxLimit {
			bad(key+".limit", p.Limit, "must be an integer from 1 to %d", MaxLimit)
		}
		if p.Window < time.Millisecond || p.Window > MaxWindow || p.Window%time.Millisecond != 0 {
			bad(key+".window", p.Window, "must be a whole number of milliseconds from 1ms to %v", MaxWindow)
		}
	}
	checkPolicy("limits.store", d.Store)
	checkPolicy("limits.terminal", d.Terminal)
	for _, name := range slices.Sorted(maps.Keys(d.Actions)) {
		key := "limits.actions." + name
		if !knownAction(name) {
			bad(key, name, "unknown action (known: %s)", strings.Join(Actions(), ", "))
			continue
		}
		checkPolicy(key, d.Actions[name])
	}
	if f := d.FallbackFraction; math.IsNaN(f) || f <= 0 || f > 1 {
		bad("limits.fallback_fraction", c.FallbackFraction, "must be a number in (0, 1]")
	}
	if d.RedisTimeout < 0 {
		bad("limits.redis_timeout", c.RedisTimeout, "must not be negative")
	}
	return errors.Join(errs...)
}

// fraction is max(1, floor(limit × f)) with f taken to six decimals, so
// that 100 × 0.57 is 57 and not 56.
func fraction(limit int, f float64) int {
	m := int64(math.Round(f * 1e6))
	n := int(int64(limit) * m / 1e6)
	if n < 1 {
		n = 1
	}
	return n
}

// validID reports whether s matches [A-Za-z0-9_-]{1,32}: the store and
// terminal ids that may appear in Redis keys (never ':', '{' or '}').
func validID(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}
