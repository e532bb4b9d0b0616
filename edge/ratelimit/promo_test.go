package ratelimit

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// freshTerminal returns a terminal id never used before in the test, so a
// probe request sees the scaled limits untouched by earlier hits.
func freshTerminal(n *atomic.Int64) string { return term(int(n.Add(1))) }

func TestPromoScaling(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := context.Background()
	cfg := testConfig()
	cfg.Store = Policy{MaxLimit, time.Minute}
	cfg.Terminal = Policy{50, time.Minute}
	var n atomic.Int64
	tests := []struct {
		name  string
		promo Promo
		want  map[string]int // policy → scaled limit its requests report
	}{
		{"every limit", Promo{Coefficient: 2}, map[string]int{"terminal": 100, "pay": 10, "scan": 40}},
		{"fixed-point floor", Promo{Coefficient: 0.57}, map[string]int{"terminal": 28, "pay": 2, "scan": 11}},
		{"at least 1", Promo{Coefficient: 0.001}, map[string]int{"terminal": 1}},
		{"at least 1, listed actions", Promo{Coefficient: 0.001, Actions: []string{"scan", "pay"}}, map[string]int{"terminal": 50, "pay": 1, "scan": 1}},
		{"only the listed actions", Promo{Coefficient: 3, Actions: []string{"pay", "pay"}}, map[string]int{"terminal": 50, "pay": 15, "scan": 20}},
		{"coefficient 10", Promo{Coefficient: 10}, map[string]int{"terminal": 500, "refund": 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			l := newTestLimiter(t, rdb, cfg, nil)
			if _, err := l.SetPromo(ctx, tt.promo); err != nil {
				t.Fatal(err)
			}
			for policy, want := range tt.want {
				action := policy
				if policy == "terminal" {
					action = ""
				}
				// Drive the level to its limit on a fresh terminal: the
				// count allowed is the scaled limit.
				id := freshTerminal(&n)
				allowed := 0
				for i := 0; i < want+3; i++ {
					d := mustAllow(t, l, id, action)
					if d.Allowed {
						allowed++
					} else if d.Policy != policy || d.Limit != want {
						t.Fatalf("%s denied by %s limit %d, want %s %d", policy, d.Policy, d.Limit, policy, want)
					}
				}
				if allowed != want {
					t.Errorf("%s: %d allowed, want %d", policy, allowed, want)
				}
			}
		})
	}
}

// A promotion reverts by itself at starts_at + ttl; a scheduled one
// applies only from starts_at, on Redis time; a new one replaces it.
func TestPromoLifecycle(t *testing.T) {
	_, rdb := startRedis(t)
	ctx := context.Background()
	cfg := testConfig()
	cfg.Terminal = Policy{10, time.Minute}
	l := newTestLimiter(t, rdb, cfg, nil)
	var n atomic.Int64
	limit := func() int { return mustAllow(t, l, freshTerminal(&n), "").Limit }
	exists := func() bool { return rdb.Exists(ctx, "pe:{S001}:promo").Val() == 1 }

	// Applies now and reverts by itself.
	p, err := l.SetPromo(ctx, Promo{Coefficient: 2, TTLSeconds: 3, SetBy: "admin@127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.ExpiresAt.Sub(p.StartsAt) != 3*time.Second || p.SetAt.IsZero() || !p.StartsAt.Equal(p.SetAt) || p.SetBy != "admin@127.0.0.1" {
		t.Fatalf("stored promotion %+v", p)
	}
	cur, err := l.CurrentPromo(ctx)
	if err != nil || cur == nil || cur.Coefficient != 2 || !cur.ExpiresAt.Equal(p.ExpiresAt) || cur.SetBy != p.SetBy {
		t.Fatalf("CurrentPromo = %+v, %v; want %+v", cur, err, p)
	}
	if got := limit(); got != 20 && exists() {
		t.Fatalf("terminal limit %d under coefficient 2, want 20", got)
	}
	testenv.WaitFor(t, 10*time.Second, "the promotion to expire", func() bool { return !exists() })
	if got := limit(); got != 10 {
		t.Fatalf("terminal limit %d after the promotion expired, want 10", got)
	}
	if cur, err := l.CurrentPromo(ctx); err != nil || cur != nil {
		t.Fatalf("CurrentPromo after expiry = %+v, %v", cur, err)
	}

	// Scheduled: nothing changes before starts_at.
	start := redisNow(t, rdb).Add(2 * time.Second)
	p, err = l.SetPromo(ctx, Promo{Coefficient: 1.5, StartsAt: start, TTLSeconds: 60, SetBy: "hq"})
	if err != nil {
		t.Fatal(err)
	}
	if !p.ExpiresAt.Equal(start.Truncate(time.Millisecond).Add(time.Minute)) {
		t.Fatalf("scheduled promotion %+v", p)
	}
	if got := limit(); got != 10 && redisNow(t, rdb).Before(start) {
		t.Fatalf("terminal limit %d before starts_at, want 10", got)
	}
	testenv.WaitFor(t, 10*time.Second, "the scheduled promotion to apply", func() bool { return limit() == 15 })
	// starts_at is kept in whole milliseconds (the script compares unix
	// ms): within its millisecond the promotion may already apply.
	if now := redisNow(t, rdb); now.Before(start.Truncate(time.Millisecond)) {
		t.Fatalf("scheduled promotion applied at %v, before starts_at %v", now, start.Truncate(time.Millisecond))
	}

	// A new promotion replaces the current one.
	if _, err := l.SetPromo(ctx, Promo{Coefficient: 3, Actions: []string{ActionScan}, SetBy: "hq"}); err != nil {
		t.Fatal(err)
	}
	if got := limit(); got != 10 {
		t.Fatalf("terminal limit %d after a scan-only promotion replaced the 1.5 one, want 10", got)
	}
	cur, _ = l.CurrentPromo(ctx)
	if cur == nil || cur.Coefficient != 3 || len(cur.Actions) != 1 || cur.Actions[0] != ActionScan || cur.TTLSeconds != 7200 {
		t.Fatalf("current promotion %+v", cur)
	}
	ttl := rdb.PTTL(ctx, "pe:{S001}:promo").Val()
	if ttl <= 7190*time.Second || ttl > 7200*time.Second {
		t.Fatalf("default ttl: PTTL %v, want about 7200s", ttl)
	}
	if err := l.ClearPromo(ctx, "hq"); err != nil || exists() {
		t.Fatalf("ClearPromo: %v, key exists %v", err, exists())
	}
}

func TestPromoInvalid(t *testing.T) {
	_, rdb := startRedis(t)
	l := newTestLimiter(t, rdb, testConfig(), nil)
	past := time.Now().Add(-3 * time.Hour)
	tests := []struct {
		name string
		p    Promo
		msg  string
	}{
		{"zero coefficient", Promo{Coefficient: 0}, "coefficient"},
		{"negative", Promo{Coefficient: -1}, "coefficient"},
		{"above 10", Promo{Coefficient: 10.01}, "coefficient"},
		{"NaN", Promo{Coefficient: math.NaN()}, "coefficient"},
		{"infinite", Promo{Coefficient: math.Inf(1)}, "coefficient"},
		{"too small to apply", Promo{Coefficient: 1e-9}, "coefficient"},
		{"negative ttl", Promo{Coefficient: 2, TTLSeconds: -5}, "ttl_seconds"},
		{"ttl over a year", Promo{Coefficient: 2, TTLSeconds: 400 * 86400}, "ttl_seconds"},
		{"unknown action", Promo{Coefficient: 2, Actions: []string{"pay", "sales"}}, `"sales"`},
		{"already over", Promo{Coefficient: 2, StartsAt: past, TTLSeconds: 3600}, "ended before now"},
		{"every problem", Promo{Coefficient: 11, TTLSeconds: -1, Actions: []string{"x"}}, "coefficient 11 must be a number in (0, 10]; ttl_seconds -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.SetPromo(context.Background(), tt.p)
			if !errors.Is(err, ErrInvalidPromo) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("SetPromo(%+v) = %v, want ErrInvalidPromo naming %s", tt.p, err, tt.msg)
			}
		})
	}
	if n := rdb.DBSize(context.Background()).Val(); n != 0 {
		t.Fatalf("%d keys written by refused promotions", n)
	}
	if _, err := l.SetPromo(context.Background(), Promo{Coefficient: 10, TTLSeconds: 1}); err != nil {
		t.Fatalf("coefficient 10 refused: %v", err)
	}
}
