// Package fakeclock is the injected clock of tests that step time by
// hand (the local rate limiter, the AuthGuard): Now stands still until
// Advance moves it, so a window's edge is reached exactly, not slept to.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told; safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New is a clock at 2026-03-01 12:00 UTC: a fixed instant, so that a
// failure reads the same on every run.
func New() *Clock { return &Clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
