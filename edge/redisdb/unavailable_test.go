package redisdb_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/redisdb"
)

func TestIsUnavailable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no error", nil, false},
		{"missing key", redis.Nil, false},
		{"cancelled by the caller", context.Canceled, false},
		{"cancelled, wrapped", fmt.Errorf("run txn.lua: %w", context.Canceled), false},
		{"timeout", context.DeadlineExceeded, true},
		{"timeout, wrapped", fmt.Errorf("run txn.lua: %w", context.DeadlineExceeded), true},
		{"client closed", redis.ErrClosed, true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, true},
		{"read-only replica", errors.New("READONLY You can't write against a read only replica."), true},
		{"out of memory", errors.New("OOM command not allowed when used memory > 'maxmemory'."), true},
	}
	for _, tt := range tests {
		if got := redisdb.IsUnavailable(tt.err); got != tt.want {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
