package testenv

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// RoundTrips counts what a client sends to Redis: one per command sent on
// its own, one per pipeline; a new connection's handshake is not counted.
// Add it with client.AddHook(&rt) and read N.
type RoundTrips struct{ n atomic.Int64 }

// N is the round trips counted so far.
func (c *RoundTrips) N() int64 { return c.n.Load() }

// Reset starts counting again from zero.
func (c *RoundTrips) Reset() { c.n.Store(0) }

func connSetup(c redis.Cmder) bool { return c.Name() == "hello" || c.Name() == "client" }

// DialHook implements redis.Hook.
func (c *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !connSetup(cmd) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !connSetup(cmds[0]) {
			c.n.Add(1)
		}
		return next(ctx, cmds)
	}
}
