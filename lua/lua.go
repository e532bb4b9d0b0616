package lua

import (
	"context"
	"embed"
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed *.lua
var files embed.FS

// Source returns the text of the named script (e.g. "ratelimit.lua").
func Source(name string) (string, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("lua script %s: %w", name, err)
	}
	return string(b), nil
}

// Script returns the named script ready for EVALSHA with EVAL fallback.
// Script.Run falls back to EVAL on NOSCRIPT (a promoted replica may have an
// empty script cache), but not inside a pipeline: a script that must share
// a round trip with other commands goes through RunPipelined.
func Script(name string) (*redis.Script, error) {
	src, err := Source(name)
	if err != nil {
		return nil, err
	}
	return redis.NewScript(src), nil
}

// MustScript is Script for names fixed at compile time; a missing file is
// a build defect caught by this package's tests, never input.
func MustScript(name string) *redis.Script {
	s, err := Script(name)
	if err != nil {
		panic(err)
	}
	return s
}

// RunPipelined runs s with keys and args, then the commands more queues
// (e.g. WAIT), on one connection in one round trip. It sends EVALSHA and,
// on NOSCRIPT (a just-promoted replica's empty script cache), sends the
// whole pipeline again with EVAL; more is called once per attempt, so the
// commands it keeps are those of the attempt whose script result this is.
func RunPipelined(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, keys []string, args []any, more func(redis.Pipeliner)) *redis.Cmd {
	send := func(bySHA bool) *redis.Cmd {
		pipe := rdb.Pipeline()
		var c *redis.Cmd
		if bySHA {
			c = s.EvalSha(ctx, pipe, keys, args...)
		} else {
			c = s.Eval(ctx, pipe, keys, args...)
		}
		if more != nil {
			more(pipe)
		}
		_, _ = pipe.Exec(ctx) // errors are read from each command
		return c
	}
	c := send(true)
	if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
		c = send(false)
	}
	return c
}
