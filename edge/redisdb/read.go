package redisdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Read queues read-only commands into the round trip of another call (the
// rate limiter's decision): they are pipelined after its script on the
// same connection, so they run whether or not the request is allowed and
// must change nothing. It is called once per attempt (twice when a
// NOSCRIPT made the caller send the pipeline again with EVAL) and returns
// the command whose reply the caller reads, or nil to read nothing. The
// package that runs the round trip knows nothing of the keys read.
type Read func(ctx context.Context, p redis.Pipeliner) redis.Cmder

// Reply is the reply of a Read, opaque to whoever only carries it from
// the round trip to the reader (edge/api, which never sees go-redis). The
// zero Reply means the read did not run.
type Reply struct{ c redis.Cmder }

// NewReply wraps the command a Read returned (nil: it did not run).
func NewReply(c redis.Cmder) Reply { return Reply{c: c} }

// Cmd is the command of the reply, nil when the read did not run.
func (r Reply) Cmd() redis.Cmder { return r.c }

// ItemFields are the item hash's fields an item is read from (ReadItem).
var itemFields = [...]string{"name", "price_cents", "stock", "active"}

// ReadItem queues, into p, the read of the item at key (Keys.Item) that
// ItemReply reads.
func ReadItem(ctx context.Context, p redis.Cmdable, key string) *redis.SliceCmd {
	return p.HMGet(ctx, key, itemFields[:]...)
}

// ItemReply is the reply of a ReadItem queued in a Read, or false when
// the read did not run.
func (r Reply) ItemReply() (*redis.SliceCmd, bool) {
	hm, ok := r.c.(*redis.SliceCmd)
	return hm, ok && hm != nil
}

// NumItemFields is how many values a ReadItem reply holds: name,
// price_cents, stock, active, in that order.
const NumItemFields = len(itemFields)
