package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// fillTerminal drives every key of one terminal to its limit under the
// current promotion: every action, then requests without action until the
// terminal level is full. It returns the number of allowed requests.
func fillTerminal(t testing.TB, l *Limiter, id string) int {
	t.Helper()
	allowed := 0
	for _, a := range append(Actions(), "") {
		for {
			d := mustAllow(t, l, id, a)
			if !d.Allowed {
				break
			}
			allowed++
		}
	}
	return allowed
}

// terminalBytes is the Redis memory of one terminal's keys (MEMORY USAGE,
// exact) and the number of hits they hold.
func terminalBytes(t testing.TB, rdb *redis.Client, id string) (bytes, hits int64) {
	t.Helper()
	ctx := context.Background()
	keys := []string{"pe:{S001}:rl:t:" + id}
	for _, a := range Actions() {
		keys = append(keys, "pe:{S001}:rl:a:"+id+":"+a)
	}
	for _, k := range keys {
		b, err := rdb.MemoryUsage(ctx, k, 0).Result()
		if err != nil {
			t.Fatalf("MEMORY USAGE %s: %v", k, err)
		}
		bytes += b
		hits += zcard(t, rdb, k)
	}
	return bytes, hits
}

// Memory bound: a key holds at most its scaled limit of hits, so a
// terminal at the contract's limits (terminal 100; scan 20, pay 5,
// refund 3, sync 50) holds at most 178 hits in five keys.
func TestMemoryPerTerminal(t *testing.T) {
	_, rdb := startRedis(t)
	cfg := Config{StoreID: "S001", Store: Policy{MaxLimit, time.Minute}, Terminal: Policy{100, time.Minute},
		Actions: map[string]Policy{ActionScan: {20, time.Minute}, ActionPay: {5, time.Minute},
			ActionRefund: {3, time.Minute}, ActionSync: {50, time.Minute}}, RedisTimeout: 5 * time.Second}
	l := newTestLimiter(t, rdb, cfg, nil)
	for _, tt := range []struct {
		name     string
		coef     float64
		id       string
		maxHits  int64
		maxBytes int64
	}{
		{"contract limits", 1, "T01", 178, 8 << 10},
		{"promotion coefficient 10", 10, "T02", 1780, 256 << 10},
	} {
		if _, err := l.SetPromo(context.Background(), Promo{Coefficient: tt.coef, SetBy: "test"}); err != nil {
			t.Fatal(err)
		}
		allowed := fillTerminal(t, l, tt.id)
		fillTerminal(t, l, tt.id) // denied hits are recorded nowhere
		b, hits := terminalBytes(t, rdb, tt.id)
		t.Logf("%s: %d requests allowed; %d hits in Redis take %d bytes per terminal at the limit (%.1f bytes/hit)",
			tt.name, allowed, hits, b, float64(b)/float64(hits))
		if hits != tt.maxHits || b > tt.maxBytes {
			t.Errorf("%s: %d hits in %d bytes, want %d hits in at most %d bytes", tt.name, hits, b, tt.maxHits, tt.maxBytes)
		}
	}
}
