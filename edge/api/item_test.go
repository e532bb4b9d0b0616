package api

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// roundTrips counts what a client sends to Redis: one per command sent on
// its own, one per pipeline; a new connection's handshake is not counted.
type roundTrips struct{ n atomic.Int64 }

func connSetup(c redis.Cmder) bool { return c.Name() == "hello" || c.Name() == "client" }

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !connSetup(cmd) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !connSetup(cmds[0]) {
			c.n.Add(1)
		}
		return next(ctx, cmds)
	}
}

// A lookup is one Redis round trip (the item read pipelined with the
// limiter's decision), answers 404 and 400 as before, and while Redis is
// down (degraded, or killed) answers the daemon's copy marked stale.
func TestItemLookup(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("I1", 250, 7)
	e.T("T01", "GET", "/v1/items/I1", nil, nil) // the script is cached from here on
	var rt roundTrips
	e.rdb.AddHook(&rt)

	tests := []struct {
		name      string
		before    func()
		path      string
		status    int
		code      string
		stale     bool
		wantTrips int64 // -1: not counted (Redis is gone)
	}{
		{"known item", nil, "/v1/items/I1", 200, "", false, 1},
		{"unknown item", nil, "/v1/items/NOPE", 404, "item_not_found", false, 1},
		{"invalid barcode", nil, "/v1/items/bad%21", 400, "invalid_barcode", false, 1},
		{"degraded: the daemon's copy", func() { e.ledger.SetRedisDown(true) }, "/v1/items/I1", 200, "", true, 1},
		{"Redis killed: the daemon's copy", func() { e.ledger.SetRedisDown(false); e.redis.KillNode(0) }, "/v1/items/I1", 200, "", true, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before()
			}
			before := rt.n.Load()
			r := e.T("T01", "GET", tt.path, nil, nil)
			if r.status != tt.status || r.code() != tt.code {
				t.Fatalf("%d %s, want %d %q", r.status, r.body, tt.status, tt.code)
			}
			if tt.status == 200 {
				m := r.json()
				if m["stale"] != tt.stale || num(m["price_cents"]) != 250 || num(m["stock"]) != 7 || m["name"] != "n I1" {
					t.Errorf("item %s, want price 250, stock 7, stale %v", r.body, tt.stale)
				}
			}
			if trips := rt.n.Load() - before; tt.wantTrips >= 0 && trips != tt.wantTrips {
				t.Errorf("%d Redis round trips, want %d", trips, tt.wantTrips)
			}
		})
	}
}
