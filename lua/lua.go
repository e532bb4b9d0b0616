package lua

import (
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
// empty script cache), but not inside a pipeline: never pipeline scripts.
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
