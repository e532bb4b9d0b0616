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
