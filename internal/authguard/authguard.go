package authguard

import (
	"sync"
	"time"
)

// Guard limits failed authentications per source address with an
// in-process sliding window: after maxFailures failures within window an
// address is blocked until the oldest of them leaves the window — the
// rest of that minute for the contract's 10 in 60 s. Failures while
// blocked are not recorded, so they do not prolong the block. Other
// addresses are not affected. Memory is bounded by the addresses that
// failed within one window, each holding at most maxFailures times.
// It is safe for concurrent use.
type Guard struct {
	max    int
	window time.Duration
	now    func() time.Time

	mu        sync.Mutex
	fails     map[string][]time.Time // oldest first, at most max
	lastSweep time.Time
}

// New returns a guard blocking an address after maxFailures
// failures within window (the contract: 10 in 60 s); now nil means
// time.Now.
func New(maxFailures int, window time.Duration, now func() time.Time) *Guard {
	if now == nil {
		now = time.Now
	}
	return &Guard{max: max(maxFailures, 1), window: window, now: now, fails: make(map[string][]time.Time)}
}

// Blocked reports whether addr is blocked and, if so, the time until it
// is not (for Retry-After).
func (g *Guard) Blocked(addr string) (bool, time.Duration) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.prune(addr, now)
	if len(f) < g.max {
		return false, 0
	}
	return true, f[len(f)-g.max].Add(g.window).Sub(now)
}

// Fail records one failed authentication from addr.
func (g *Guard) Fail(addr string) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now)
	f := g.prune(addr, now)
	if len(f) >= g.max {
		return
	}
	g.fails[addr] = append(f, now)
}

// prune drops addr's failures at or before now-window.
func (g *Guard) prune(addr string, now time.Time) []time.Time {
	f := g.fails[addr]
	k := 0
	for k < len(f) && !f[k].Add(g.window).After(now) {
		k++
	}
	if k == 0 {
		return f
	}
	if k == len(f) {
		delete(g.fails, addr)
		return nil
	}
	f = f[:copy(f, f[k:])]
	g.fails[addr] = f
	return f
}

// sweep forgets addresses without failures in the window, once a window.
func (g *Guard) sweep(now time.Time) {
	if now.Sub(g.lastSweep) < g.window {
		return
	}
	g.lastSweep = now
	for a := range g.fails {
		g.prune(a, now)
	}
}
