package redisdb

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// IsUnavailable tells errors that mean "Redis cannot take writes now":
// network failures, timeouts, and the refusals of a Redis that answers but
// will not write (OOM, READONLY, NOREPLICAS, MISCONF, LOADING, MASTERDOWN).
// A cancelled call (the till hung up) says nothing about Redis: it is not
// an outage.
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) {
		return true
	}
	msg := err.Error()
	for _, p := range []string{"OOM", "READONLY", "NOREPLICAS", "MISCONF", "LOADING", "MASTERDOWN", "BUSY", "TRYAGAIN", "CLUSTERDOWN"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	var re redis.Error
	if errors.As(err, &re) {
		return false // any other Redis reply error is a bug, not an outage
	}
	return true // network errors: refused, reset, i/o timeout, EOF
}
