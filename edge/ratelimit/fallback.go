package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// fallbackState tracks whether the local limiter decides. It turns on
// when a Redis call fails or misses its deadline; while on, a background
// PING probes Redis every probeEvery (by Config.Now); once Redis answers,
// the local limiter keeps deciding for one more longest window (hold), so
// the store does not get a fresh Redis quota on top of what it just spent
// locally.
type fallbackState struct {
	active      atomic.Bool
	mu          sync.Mutex
	since       time.Time
	recoveredAt time.Time // zero while Redis does not answer
	lastProbe   time.Time
	probing     bool
}

// useLocal reports whether the local limiter decides now, leaving the
// fallback once the hold after Redis returned has passed.
func (l *Limiter) useLocal() bool {
	if !l.fb.active.Load() {
		return false
	}
	now := l.cfg.Now()
	l.fb.mu.Lock()
	defer l.fb.mu.Unlock()
	if !l.fb.active.Load() {
		return false
	}
	if !l.fb.recoveredAt.IsZero() {
		if now.Sub(l.fb.recoveredAt) >= l.hold {
			l.fb.active.Store(false)
			l.m.fallback.Set(0)
			l.log.Info("rate limiter back on Redis", "fallback_for", now.Sub(l.fb.since).String())
			return false
		}
		return true
	}
	if !l.fb.probing && now.Sub(l.fb.lastProbe) >= probeEvery {
		l.fb.probing, l.fb.lastProbe = true, now
		go l.probe()
	}
	return true
}

// probe PINGs Redis with the decision deadline; it never runs twice at once.
func (l *Limiter) probe() {
	err := l.withDeadline(context.Background(), func(ctx context.Context) error {
		return l.rdb.Ping(ctx).Err()
	})
	l.fb.mu.Lock()
	defer l.fb.mu.Unlock()
	l.fb.probing = false
	if err != nil || !l.fb.active.Load() || !l.fb.recoveredAt.IsZero() {
		return
	}
	l.fb.recoveredAt = l.cfg.Now()
	l.log.Info("Redis answers again; the local rate limiter keeps deciding for one window",
		"hold", l.hold.String())
}

// enterFallback switches to the local limiter after a failed Redis call.
func (l *Limiter) enterFallback(err error) {
	now := l.cfg.Now()
	l.fb.mu.Lock()
	defer l.fb.mu.Unlock()
	if l.fb.active.Load() {
		l.fb.recoveredAt = time.Time{}
		return
	}
	l.fb.since, l.fb.lastProbe, l.fb.recoveredAt = now, now, time.Time{}
	l.fb.active.Store(true)
	l.m.fallback.Set(1)
	l.log.Warn("Redis did not answer the rate limiter; the local limiter decides at a fraction of every limit",
		"err", err, "fallback_fraction", l.cfg.FallbackFraction, "redis_timeout", l.cfg.RedisTimeout.String())
}

// FallbackHeldUntil is when the deliberate hold after Redis returned ends:
// zero while the fallback is off or Redis still does not answer. The
// local limiter hands back to Redis at the first decision after it.
func (l *Limiter) FallbackHeldUntil() time.Time {
	back, ok := l.recovered()
	if !ok {
		return time.Time{}
	}
	return back.Add(l.hold)
}

// recovered reports when Redis answered again during the fallback.
func (l *Limiter) recovered() (time.Time, bool) {
	l.fb.mu.Lock()
	defer l.fb.mu.Unlock()
	return l.fb.recoveredAt, l.fb.active.Load() && !l.fb.recoveredAt.IsZero()
}

// localLimiter is the in-process sliding-window log of the fallback, with
// the same levels and keys as on Redis. A log holds at most its fallback
// limit of hits; logs whose hits all left their window are dropped every
// sweep interval, so memory is bounded by the keys used within one window.
type localLimiter struct {
	mu         sync.Mutex
	logs       map[string]*hitLog
	sweepEvery time.Duration
	lastSweep  time.Time
}

type hitLog struct {
	window time.Duration
	hits   []time.Time // oldest first
}

func newLocalLimiter(sweepEvery time.Duration) *localLimiter {
	return &localLimiter{logs: make(map[string]*hitLog), sweepEvery: sweepEvery}
}

// prune drops the hits at or before now-window, as ZREMRANGEBYSCORE does.
func (h *hitLog) prune(now time.Time) {
	k := 0
	for k < len(h.hits) && !h.hits[k].Add(h.window).After(now) {
		k++
	}
	if k > 0 {
		n := copy(h.hits, h.hits[k:])
		h.hits = h.hits[:n]
	}
}

// decide mirrors ratelimit.lua on the fallback limits and the given clock.
func (ll *localLimiter) decide(now time.Time, lv []level) (Decision, int) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	ll.sweep(now)
	var cbuf [3]int
	counts := cbuf[:0]
	allowed := true
	for _, v := range lv {
		c := 0
		if h := ll.logs[v.key]; h != nil {
			h.window = v.pol.Window
			h.prune(now)
			c = len(h.hits)
		}
		counts = append(counts, c)
		if c >= v.fallback {
			allowed = false
		}
	}
	if allowed {
		for i, v := range lv {
			h := ll.logs[v.key]
			if h == nil {
				h = &hitLog{window: v.pol.Window, hits: make([]time.Time, 0, min(v.fallback, 64))}
				ll.logs[v.key] = h
			}
			h.hits = append(h.hits, now)
			counts[i]++
		}
	}
	best, bestRem, bestReset := 0, 0, time.Duration(0)
	for i, v := range lv {
		rem := max(v.fallback-counts[i], 0)
		var reset time.Duration
		if h := ll.logs[v.key]; h != nil && len(h.hits) > 0 {
			idx := max(len(h.hits)-v.fallback, 0)
			reset = max(h.hits[idx].Add(v.pol.Window).Sub(now), 0)
		}
		if i == 0 || rem < bestRem || (rem == bestRem && reset > bestReset) {
			best, bestRem, bestReset = i, rem, reset
		}
	}
	return Decision{
		Allowed:   allowed,
		Policy:    lv[best].name,
		Limit:     lv[best].fallback,
		Window:    lv[best].pol.Window,
		Remaining: bestRem,
		Reset:     bestReset,
		Fallback:  true,
	}, best
}

// sweep drops idle logs, at most once per sweepEvery.
func (ll *localLimiter) sweep(now time.Time) {
	if now.Sub(ll.lastSweep) < ll.sweepEvery {
		return
	}
	ll.lastSweep = now
	for k, h := range ll.logs {
		h.prune(now)
		if len(h.hits) == 0 {
			delete(ll.logs, k)
		}
	}
}
