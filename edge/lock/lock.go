package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/redis/go-redis/v9"
)

// Errors callers tell apart with errors.Is.
var (
	// ErrHeld: another owner holds the lock; try again later.
	ErrHeld = errors.New("lock held by another owner")
	// ErrLost: the lock expired or was taken over; the holder must stop.
	ErrLost = errors.New("lock lost: it expired or another owner took it")
	// ErrFenced: a fenced script refused to write because a newer holder
	// took the lock since this one (its fencing number is stale).
	ErrFenced = errors.New("fenced: a newer holder took the lock")
)

// The lock key holds the owner's token; its fence key (redisdb.Fence)
// holds a counter that only ever grows (INCR on every acquisition, never
// expires), so the n-th holder's fencing number is n. The scripts are
// lua/lock_*.lua, called through edge/redisdb.

// Lock is one acquisition of a named lock.
type Lock struct {
	rdb   redis.UniversalClient
	key   string
	token string
	fence int64
}

// Acquire takes the lock at key for ttl, or returns ErrHeld. The key
// should carry the store's hash tag (redisdb.Keys.Lock) so the lock, its
// fence and the keys fenced scripts write live on one slot.
//
// Like every single-Redis lock, a Sentinel failover that loses the last
// asynchronously replicated writes can lose an acquisition (and its
// fence increment): jobs run under it must stay safe if that happens —
// the reconciliation's corrections are deltas confirmed twice.
func Acquire(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("lock %s: ttl %v is under a millisecond", key, ttl)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	l := &Lock{rdb: rdb, key: key, token: hex.EncodeToString(b[:])}
	n, err := redisdb.RunLockAcquire(ctx, rdb, key, l.token, ttl.Milliseconds()).Int64()
	if err != nil {
		return nil, fmt.Errorf("acquire lock %s: %w", key, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("acquire lock %s: %w", key, ErrHeld)
	}
	l.fence = n
	return l, nil
}

// Named is the lock of one named job: a key on one Redis. Its owner
// (the package that owns the key layout) builds it; the job only takes it.
type Named struct {
	rdb redis.UniversalClient
	key string
}

// NewNamed is the lock at key on rdb.
func NewNamed(rdb redis.UniversalClient, key string) Named { return Named{rdb: rdb, key: key} }

// Acquire is Acquire on n's key.
func (n Named) Acquire(ctx context.Context, ttl time.Duration) (*Lock, error) {
	return Acquire(ctx, n.rdb, n.key, ttl)
}

// Do is Do on n's key.
func (n Named) Do(ctx context.Context, ttl time.Duration, job func(ctx context.Context, l *Lock) error) error {
	return Do(ctx, n.rdb, n.key, ttl, job)
}

// Key is the lock's Redis key.
func (l *Lock) Key() string { return l.key }

// Token is this holder's owner token.
func (l *Lock) Token() string { return l.token }

// Fence is this holder's fencing number: higher than every earlier holder's.
func (l *Lock) Fence() int64 { return l.fence }

// Extend resets the lock's expiry to ttl from now if this holder still
// holds it (compare-and-extend), else ErrLost.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	n, err := redisdb.RunLockExtend(ctx, l.rdb, l.key, l.token, ttl.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("extend lock %s: %w", l.key, err)
	}
	if n == 0 {
		return fmt.Errorf("extend lock %s: %w", l.key, ErrLost)
	}
	return nil
}

// Release deletes the lock if this holder still holds it
// (compare-and-delete): a holder whose lock expired never deletes its
// successor's. ErrLost when it no longer held it.
func (l *Lock) Release(ctx context.Context) error {
	n, err := redisdb.RunLockRelease(ctx, l.rdb, l.key, l.token).Int64()
	if err != nil {
		return fmt.Errorf("release lock %s: %w", l.key, err)
	}
	if n == 0 {
		return fmt.Errorf("release lock %s: %w", l.key, ErrLost)
	}
	return nil
}

// Run runs the fenced script s with keys and args if l's fence is still
// current, else returns ErrFenced and s writes nothing. A fenced script
// (lua/correct.lua) takes the fence counter as KEYS[1] and the holder's
// fencing number as ARGV[1], before its own keys and arguments, checks
// them before any write in the same script (so no newer holder can slip
// in between check and write), and replies an error starting "FENCED"
// when they differ.
//
// A fence only goes stale when a newer holder acquired the lock; a holder
// whose lock merely expired with no successor may still write
// (Kleppmann's fencing token semantics).
func (l *Lock) Run(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	v, err := redisdb.RunFenced(ctx, l.rdb, s, l.key, l.fence, keys, args...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		if redis.HasErrorPrefix(err, "FENCED") {
			return nil, fmt.Errorf("%w (%v)", ErrFenced, err)
		}
		return nil, err
	}
	return v, nil
}

// Do runs job while holding the lock at key: it acquires it (ErrHeld if
// taken), extends it every ttl/3 while job runs, cancels job's context
// when the lock is lost, and releases it afterwards.
func Do(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration, job func(ctx context.Context, l *Lock) error) error {
	l, err := Acquire(ctx, rdb, key, ttl)
	if err != nil {
		return err
	}
	jctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				ectx, ecancel := context.WithTimeout(context.Background(), ttl/3)
				err := l.Extend(ectx, ttl)
				ecancel()
				if errors.Is(err, ErrLost) {
					cancel(err)
					return
				}
			}
		}
	}()
	jerr := job(jctx, l)
	close(done)
	lost := context.Cause(jctx)
	cancel(nil)
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer rcancel()
	rerr := l.Release(rctx)
	switch {
	case jerr != nil:
		return jerr
	case errors.Is(lost, ErrLost):
		return lost
	case errors.Is(rerr, ErrLost):
		return rerr
	}
	return nil
}
