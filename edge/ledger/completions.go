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
//
// Marks whose pipeline failed on the link wait apart (again): a store's
// other daemon journals a sale whose record stays PROCESSING 5 s, so
// they are sent again rather than dropped, riding in the next sales'
// pipelines or going on their own after retryDelay.
type completions struct {
	flush func([]completion) // sends marks in one pipeline, off the caller's path

	mu    sync.Mutex
	queue []completion // new marks, fewer than completeMax
	timer *time.Timer  // sends queue after completeDelay
	again []completion // marks whose pipeline failed, oldest first
	retry *time.Timer  // sends again after retryDelay
}

type completion struct {
	term, key string
}

const (
	completeDelay = 5 * time.Millisecond
	completeMax   = 256
	// retryDelay is how long failed marks wait for a sale to carry them
	// before they go on their own: well within the 5 s after which the
	// other daemon journals the sale, and not every completeDelay while
	// Redis is down (one pipeline at a time, once a second).
	retryDelay = time.Second
	// retryMax bounds the failed marks kept: beyond it the oldest are
	// dropped (each is still recovered from the journal and answered from
	// it here; what a lost mark costs is a retry on the store's other
	// daemon journaling the sale there too).
	retryMax = 4096
)

// add queues the mark of (term, key).
func (c *completions) add(term, key string) {
	c.mu.Lock()
	c.queue = append(c.queue, completion{term, key})
	if len(c.queue) >= completeMax {
		q := c.queue
		c.queue = nil
		c.stopTimer()
		c.mu.Unlock()
		go c.flush(q)
		return
	}
	if c.timer == nil {
		c.timer = time.AfterFunc(completeDelay, c.fire)
	}
	c.mu.Unlock()
}

// failed keeps marks whose pipeline failed, to be sent again. It returns
// how many of the oldest it dropped to stay within retryMax.
func (c *completions) failed(cs []completion) (dropped int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.again = append(c.again, cs...)
	if over := len(c.again) - retryMax; over > 0 {
		c.again = append(c.again[:0:0], c.again[over:]...)
		dropped = over
	}
	if c.retry == nil {
		c.retry = time.AfterFunc(retryDelay, c.fireAgain)
	}
	return dropped
}

// take removes the marks for the caller's pipeline: every new one, and
// failed ones up to completeMax in all (a sale's script carries each
// mark's keys: not thousands after an outage).
func (c *completions) take() []completion {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue
	c.queue = nil
	c.stopTimer()
	if n := min(len(c.again), completeMax-len(q)); n > 0 {
		q = append(q, c.again[:n]...)
		c.again = c.again[n:]
		if len(c.again) == 0 && c.retry != nil {
			c.retry.Stop()
			c.retry = nil
		}
	}
	return q
}

func (c *completions) stopTimer() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

func (c *completions) fire()      { c.send(&c.queue, &c.timer) }
func (c *completions) fireAgain() { c.send(&c.again, &c.retry) }

// send flushes the marks of *q, whose timer *t has fired.
func (c *completions) send(q *[]completion, t **time.Timer) {
	c.mu.Lock()
	cs := *q
	*q, *t = nil, nil
	c.mu.Unlock()
	if len(cs) > 0 {
		c.flush(cs)
	}
}
