package ratelimit

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// testConfig uses the contract's limits with long windows, so that bursts
// of a test fit in one window on a loaded machine, and a generous Redis
// deadline, so that a slow machine never falls back by accident.
func testConfig() Config {
	return Config{
		StoreID:  "S001",
		Store:    Policy{1000, time.Minute},
		Terminal: Policy{100, time.Minute},
		Actions: map[string]Policy{
			ActionScan:   {20, time.Minute},
			ActionPay:    {5, time.Minute},
			ActionRefund: {3, time.Minute},
			ActionSync:   {50, time.Minute},
		},
		FallbackFraction: 0.5,
		RedisTimeout:     5 * time.Second,
	}
}

func newTestLimiter(t testing.TB, rdb redis.UniversalClient, cfg Config, reg prometheus.Registerer) *Limiter {
	t.Helper()
	l, err := New(rdb, cfg, nil, reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

func mustAllow(t testing.TB, l *Limiter, terminal, action string) Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), terminal, action)
	if err != nil {
		t.Fatalf("Allow(%s, %q): %v", terminal, action, err)
	}
	return d
}

func zcard(t testing.TB, rdb *redis.Client, key string) int64 {
	t.Helper()
	n, err := rdb.ZCard(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("ZCARD %s: %v", key, err)
	}
	return n
}

// redisNow is Redis's own clock, the one every decision uses.
func redisNow(t testing.TB, rdb *redis.Client) time.Time {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now
}

// startRedis is one real redis-server and a client to it.
func startRedis(t testing.TB) (*testenv.Redis, *redis.Client) {
	t.Helper()
	r := testenv.StartRedisSingle(t)
	return r, r.NodeClient(0)
}

// secondClient is another connection pool to the same Redis, as a second
// daemon of the store would have.
func secondClient(t testing.TB, r *testenv.Redis) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.NodeAddr(0), DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

func term(i int) string { return "T" + strconv.Itoa(i) }
