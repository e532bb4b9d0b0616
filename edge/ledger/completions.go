package ledger

import (
	"sync"
	"time"
)

// completions are idempotency records journaled and answered but not yet
// marked COMPLETED in Redis (issue 26). Marking is bookkeeping — a retry
// is answered from the journal, and a record left PROCESSING is recovered
// from it — so instead of a round trip (and a goroutine) per sale, the
// marks ride in the next sale's pipeline; when no sale comes within
// completeDelay, or completeMax wait, they go in one pipeline of their own.
type completions struct {
	flush func([]completion) // sends marks in one pipeline, off the caller's path

	mu    sync.Mutex
	queue []completion
	timer *time.Timer
}

type completion struct {
	term, key string
}

const (
	completeDelay = 5 * time.Millisecond
	completeMax   = 256
	// retryMax bounds the marks kept for another try: beyond it the
	// oldest are dropped (each is still recovered from the journal and
	// answered from it here; what a lost mark costs is a retry on the
	// store's other daemon journaling the sale there too).
	retryMax = 4096
	// retryDelay is how long failed marks wait for a run to carry them
	// before they go again on their own: a store's other daemon journals
	// a sale whose record stays PROCESSING 5 s, so they must go before,
	// without asking a Redis that is down every completeDelay.
	retryDelay = time.Second
)

// add queues the mark of (term, key).
func (c *completions) add(term, key string) {
	c.mu.Lock()
	c.queue = append(c.queue, completion{term, key})
	if len(c.queue) >= completeMax {
		q := c.takeLocked()
		c.mu.Unlock()
		go c.flush(q)
		return
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(completeDelay, c.fire)
	}
	c.mu.Unlock()
}

// retry queues again marks whose pipeline failed, ahead of the newer
// ones: they ride in the next run's pipeline, or go on their own after
// retryDelay (not completeDelay: a Redis that is down is asked once a
// second, one pipeline at a time). It returns how many of the oldest it
// dropped to stay within retryMax.
func (c *completions) retry(cs []completion) (dropped int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queue = append(cs[:len(cs):len(cs)], c.queue...)
	if over := len(c.queue) - retryMax; over > 0 {
		c.queue = c.queue[over:]
		dropped = over
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(retryDelay, c.fire)
	}
	return dropped
}

// take removes every queued mark, for the caller's pipeline.
func (c *completions) take() []completion {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.takeLocked()
}

func (c *completions) takeLocked() []completion {
	q := c.queue
	c.queue = nil
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	return q
}

func (c *completions) fire() {
	if q := c.take(); len(q) > 0 {
		c.flush(q)
	}
}
