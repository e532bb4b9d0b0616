package ledger

import (
	"context"
	"fmt"
	"time"
)

// Serve first, recover behind (docs/durability.md, Start-up): the daemon
// takes sales from its first second, in degraded mode, while start-up
// recovery runs; the ledger hands over to Redis only once Redis holds
// every degraded sale the journal does.

// Recover runs start-up recovery behind a ledger that already serves:
// it enters degraded mode at once, retries Start every `every` until
// Redis answers and the whole backlog is applied, then keeps degraded
// mode in step with Redis (Watch) until ctx ends. Sales taken meanwhile
// are journaled first with degraded flow numbers, exactly as in any
// outage, and applied by the recovery that runs behind them.
func (l *Ledger) Recover(ctx context.Context, every time.Duration) {
	l.SetRedisDown(true)
	for {
		start := time.Now()
		id, err := l.Start(ctx)
		if err == nil {
			l.log.Info("start-up recovery finished: selling on redis", "took", time.Since(start).Round(time.Millisecond).String())
			l.Watch(ctx, every, id)
			return
		}
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("start-up recovery incomplete: degraded mode until redis answers", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// heldDegraded reports whether the ledger is in degraded mode and, when
// it is, holds the mode's read lock: the caller journals its degraded
// transaction, then calls l.modeMu.RUnlock. A hand-over to Redis
// (handOver) waits for every such transaction, so none can be journaled
// unapplied after normal mode began.
func (l *Ledger) heldDegraded() bool {
	l.modeMu.RLock()
	if l.Degraded() {
		return true
	}
	l.modeMu.RUnlock()
	return false
}

// handOver leaves degraded mode after a successful repair. Repair applied
// the backlog without stopping the tills, but tills selling degraded as
// fast as they are answered add rows faster than one script each applies
// them. So first, with the tills selling on, degraded transactions
// journaled from now on apply themselves (recordHeld) and the rows
// waiting are applied in passes until at most handOverRows are left;
// only then is the mode locked for the last of them, so when normal mode
// begins Redis holds every degraded transaction of the journal and a sale
// is never applied both by recovery and by the normal path (the normal
// path answers any key the journal holds from the journal). More than
// handOverMaxRows left under the lock (Redis failing the rows one by one)
// is not applied there: the ledger stays degraded and the caller retries,
// the tills selling on. If Redis fails, the ledger stays degraded and the
// caller retries.
func (l *Ledger) handOver(ctx context.Context) error {
	if !l.Degraded() && !l.hasUnapplied(ctx) {
		return nil
	}
	if err := l.lowerReapplyMark(ctx); err != nil {
		return fmt.Errorf("lower the re-apply mark below the degraded rows: %w", err)
	}
	l.catchingUp.Store(true)
	defer l.catchingUp.Store(false)
	deadline := time.Now().Add(handOverBudget)
	for {
		if _, err := l.catchUpDegraded(ctx); err != nil {
			return err
		}
		l.modeMu.Lock()
		n, err := l.j.CountUnapplied(ctx)
		if err != nil {
			l.modeMu.Unlock()
			return fmt.Errorf("count the degraded transactions left: %w", err)
		}
		if n <= handOverMaxRows {
			err := l.lockedHandOver(ctx)
			l.modeMu.Unlock()
			return err
		}
		l.modeMu.Unlock()
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%d degraded transactions still to apply after %v: staying degraded", n, handOverBudget)
		}
	}
}

// handOverBudget bounds the passes of a hand-over before it gives up and
// leaves the ledger degraded for the next try.
const handOverBudget = time.Minute

// handOverMaxRows is the most the hand-over applies while the tills wait:
// a few hundred milliseconds of scripts.
const handOverMaxRows = 4 * handOverRows

// lockedHandOver applies the last degraded rows and switches to normal
// mode; the caller holds modeMu for writing.
func (l *Ledger) lockedHandOver(ctx context.Context) error {
	// Each script call has its own Redis timeout, so an outage still
	// fails the hand-over at once; this bound is for the rows left.
	ctx, cancel := context.WithTimeout(ctx, max(4*(l.cfg.RedisTimeout+l.cfg.WaitTimeout), 30*time.Second))
	defer cancel()
	if _, err := l.ApplyDegraded(ctx); err != nil {
		return err
	}
	l.SetRedisDown(false)
	return nil
}
