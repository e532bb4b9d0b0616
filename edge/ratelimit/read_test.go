package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// AllowRead sends the decision and the caller's read in one round trip,
// allowed or denied (the read runs either way and the denied request is
// charged nowhere), and after SCRIPT FLUSH (a promoted replica's empty
// cache) sends the pipeline again with EVAL, the read's reply being that
// of the attempt that answered.
func TestAllowReadOneRoundTrip(t *testing.T) {
	r := testenv.StartRedisSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.NodeAddr(0), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	var rt testenv.RoundTrips
	rdb.AddHook(&rt)
	ctx := context.Background()
	if err := rdb.Set(ctx, "other:key", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Actions[ActionPay] = Policy{2, time.Minute}
	l := newTestLimiter(t, rdb, cfg, nil)
	read := func(ctx context.Context, p redis.Pipeliner) redis.Cmder { return p.Get(ctx, "other:key") }

	tests := []struct {
		name        string
		flush       bool // SCRIPT FLUSH first: the EVALSHA meets NOSCRIPT
		wantAllowed bool
		wantTrips   int64
		wantCharged int64 // hits in the action level's log after the call
	}{
		{"first, script not loaded yet", false, true, 2, 1}, // NOSCRIPT, then the EVAL pipeline
		{"allowed, script cached", false, true, 1, 2},
		{"denied", false, false, 1, 2},
		{"denied after SCRIPT FLUSH", true, false, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.flush {
				if err := rdb.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			before := rt.N()
			d, reply, err := l.AllowRead(ctx, "T01", ActionPay, read)
			if err != nil {
				t.Fatal(err)
			}
			if trips := rt.N() - before; trips != tt.wantTrips {
				t.Errorf("%d round trips, want %d", trips, tt.wantTrips)
			}
			if d.Allowed != tt.wantAllowed || d.Fallback {
				t.Errorf("decision %+v, want allowed=%v on Redis", d, tt.wantAllowed)
			}
			sc, ok := reply.Cmd().(*redis.StringCmd)
			if !ok {
				t.Fatalf("reply %T %v, want the GET's *redis.StringCmd", reply, reply)
			}
			if v, err := sc.Result(); err != nil || v != "v1" {
				t.Errorf("read reply %q, %v; want v1", v, err)
			}
			if n := zcard(t, rdb, "pe:{S001}:rl:a:T01:pay"); n != tt.wantCharged {
				t.Errorf("%d hits charged, want %d", n, tt.wantCharged)
			}
		})
	}
}

// When the local limiter decides (Redis did not answer), AllowRead gives
// no reply: the caller reads by itself, as it would without the limiter.
func TestAllowReadFallbackNoReply(t *testing.T) {
	r := testenv.StartRedisSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.NodeAddr(0), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	cfg := testConfig()
	cfg.RedisTimeout = 300 * time.Millisecond
	l := newTestLimiter(t, rdb, cfg, nil)
	r.KillNode(0)
	queued := 0
	read := func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		queued++
		return p.Get(ctx, "other:key")
	}
	for i, want := range []int{1, 1} { // the failed round trip, then the local limiter alone
		d, reply, err := l.AllowRead(context.Background(), "T01", ActionScan, read)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Fallback || !d.Allowed || reply.Cmd() != nil {
			t.Fatalf("call %d: decision %+v reply %v, want allowed by the fallback and no reply", i, d, reply)
		}
		if queued != want {
			t.Fatalf("call %d: read queued %d times, want %d", i, queued, want)
		}
	}
}

// The daemon's clients (edge/daemon: ContextTimeoutEnabled, plain or
// through Sentinel) are called directly, with no goroutine per decision;
// only a client that ignores context deadlines gets one (withDeadline).
func TestDirectCallForContextTimeoutClients(t *testing.T) {
	tests := []struct {
		name   string
		client redis.UniversalClient
		direct bool
	}{
		{"plain, ContextTimeoutEnabled", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}), true},
		{"Sentinel failover, ContextTimeoutEnabled", redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m",
			SentinelAddrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true}), true},
		{"plain, context deadlines ignored", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.client.Close()
			if l := newTestLimiter(t, tt.client, testConfig(), nil); l.direct != tt.direct {
				t.Fatalf("direct = %v, want %v", l.direct, tt.direct)
			}
		})
	}
}
