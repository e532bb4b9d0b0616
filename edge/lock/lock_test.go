package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/lock"
	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/lua"
)

const key = "pe:{S1}:lock:job"

// two clients: two daemons of one store on one Redis.
func twoClients(t *testing.T) (*redis.Client, *redis.Client) {
	r := testenv.StartRedisSingle(t)
	return r.NodeClient(0), r.NodeClient(0)
}

func TestMutualExclusionAcrossClients(t *testing.T) {
	a, b := twoClients(t)
	ctx := context.Background()
	var holders, maxHolders, wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < 20; n++ {
				l, err := lock.Acquire(ctx, c, key, 5*time.Second)
				if errors.Is(err, lock.ErrHeld) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				wins.Add(1)
				if h := holders.Add(1); h > maxHolders.Load() {
					maxHolders.Store(h)
				}
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				if err := l.Release(ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if maxHolders.Load() != 1 {
		t.Fatalf("%d holders at once", maxHolders.Load())
	}
	if wins.Load() == 0 {
		t.Fatal("nobody ever got the lock")
	}
	// Fences grew by one per acquisition.
	if f, _ := a.Get(ctx, redisdb.Fence(key)).Int64(); f != int64(wins.Load()) {
		t.Fatalf("fence %d after %d acquisitions", f, wins.Load())
	}
}

func TestExpiryReleaseAndExtend(t *testing.T) {
	a, b := twoClients(t)
	ctx := context.Background()
	l1, err := lock.Acquire(ctx, a, key, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Acquire(ctx, b, key, time.Second); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("second acquire while held: %v", err)
	}
	if err := l1.Extend(ctx, 300*time.Millisecond); err != nil {
		t.Fatalf("extend while held: %v", err)
	}
	var l2 *lock.Lock
	testenv.WaitFor(t, 5*time.Second, "the lock to expire", func() bool {
		l2, err = lock.Acquire(ctx, b, key, 10*time.Second)
		return err == nil
	})
	if l2.Fence() <= l1.Fence() {
		t.Fatalf("fence did not grow: %d then %d", l1.Fence(), l2.Fence())
	}
	// The expired holder can neither extend nor delete its successor's lock.
	if err := l1.Extend(ctx, time.Minute); !errors.Is(err, lock.ErrLost) {
		t.Fatalf("stale extend: %v", err)
	}
	if err := l1.Release(ctx); !errors.Is(err, lock.ErrLost) {
		t.Fatalf("stale release: %v", err)
	}
	if v, _ := a.Get(ctx, key).Result(); v != l2.Token() {
		t.Fatalf("successor's lock gone after a stale release: %q", v)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("lock still there after release")
	}
}

// A holder paused past its lock's expiry (GC, a frozen VM) wakes up after
// another took the lock: its fenced write is refused and changes nothing.
func TestStaleHolderFenced(t *testing.T) {
	a, b := twoClients(t)
	ctx := context.Background()
	// The fenced script the daily reconciliation runs: "counter" adds a
	// delta to a hash field.
	add := lua.MustScript("correct.lua")
	const target = "pe:{S1}:daily:20260101"
	count := func() string { return a.HGet(ctx, target, "n").Val() }

	stale, err := lock.Acquire(ctx, a, key, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stale.Run(ctx, add, []string{target}, "counter", "n", 1, ""); err != nil || count() != "1" {
		t.Fatalf("fenced write by the holder: %v, count %s", err, count())
	}
	var fresh *lock.Lock
	testenv.WaitFor(t, 5*time.Second, "another client to take the expired lock", func() bool {
		fresh, err = lock.Acquire(ctx, b, key, 10*time.Second)
		return err == nil
	})
	if _, err := stale.Run(ctx, add, []string{target}, "counter", "n", 10, ""); !errors.Is(err, lock.ErrFenced) {
		t.Fatalf("stale holder's write: %v", err)
	}
	if count() != "1" {
		t.Fatalf("stale write landed: %s", count())
	}
	if _, err := fresh.Run(ctx, add, []string{target}, "counter", "n", 1, ""); err != nil {
		t.Fatal(err)
	}
	if count() != "2" {
		t.Fatalf("current holder's write: %s", count())
	}
	// Named is the same lock, taken by name.
	if _, err := lock.NewNamed(b, key).Acquire(ctx, time.Second); !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("named lock while held: %v", err)
	}
}

// Do keeps the lock while the job runs longer than its ttl, and cancels
// the job when the lock is taken away.
func TestDoExtendsAndCancelsOnLoss(t *testing.T) {
	a, b := twoClients(t)
	ctx := context.Background()
	err := lock.Do(ctx, a, key, 150*time.Millisecond, func(ctx context.Context, l *lock.Lock) error {
		deadline := time.Now().Add(600 * time.Millisecond)
		for time.Now().Before(deadline) {
			if _, err := lock.Acquire(ctx, b, key, time.Second); !errors.Is(err, lock.ErrHeld) {
				t.Errorf("lock not kept by Do: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = lock.Do(ctx, a, key, 300*time.Millisecond, func(ctx context.Context, l *lock.Lock) error {
		a.Del(ctx, key) // an operator (or a failover) removes it
		b.Set(ctx, key, "someone-else", time.Minute)
		<-ctx.Done()
		return nil
	})
	if !errors.Is(err, lock.ErrLost) {
		t.Fatalf("Do after the lock was taken: %v", err)
	}
	if v, _ := a.Get(ctx, key).Result(); v != "someone-else" {
		t.Fatalf("Do deleted another owner's lock: %q", v)
	}
}
