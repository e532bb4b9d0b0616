package lua

import (
	"context"
	"testing"
)

// The raw contract of the lock scripts (edge/lock's tests cover the
// behaviour): fencing numbers grow by one per acquisition, and only the
// token holding the lock extends or deletes it.
func TestLockScripts(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	lock, fence := "pe:{S}:lock:job", "pe:{S}:lock:job:fence"
	acquire := func(token string, ttlMS int) int64 {
		t.Helper()
		n, err := MustScript("lock_acquire.lua").Run(ctx, rdb, []string{lock, fence}, token, ttlMS).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	run := func(name, token string, args ...any) int64 {
		t.Helper()
		n, err := MustScript(name).Run(ctx, rdb, []string{lock}, append([]any{token}, args...)...).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := acquire("a", 60000); n != 1 {
		t.Fatalf("first acquisition: fence %d, want 1", n)
	}
	if n := acquire("b", 60000); n != 0 {
		t.Fatalf("acquisition while held: %d, want 0", n)
	}
	if v := rdb.Get(ctx, fence).Val(); v != "1" {
		t.Fatalf("fence counter %q after a refused acquisition, want 1", v)
	}
	tests := []struct {
		name, script, token string
		want                int64
	}{
		{"stranger extends", "lock_extend.lua", "b", 0},
		{"holder extends", "lock_extend.lua", "a", 1},
		{"stranger releases", "lock_release.lua", "b", 0},
		{"holder releases", "lock_release.lua", "a", 1},
		{"holder releases twice", "lock_release.lua", "a", 0},
		{"extend after release", "lock_extend.lua", "a", 0},
	}
	for _, tt := range tests {
		var extra []any
		if tt.script == "lock_extend.lua" {
			extra = []any{120000}
		}
		if got := run(tt.script, tt.token, extra...); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
		if tt.name == "holder extends" {
			if ttl := rdb.PTTL(ctx, lock).Val().Milliseconds(); ttl <= 60000 {
				t.Errorf("PTTL %dms after extending to 120s", ttl)
			}
		}
	}
	if n := acquire("b", 60000); n != 2 {
		t.Fatalf("acquisition after release: fence %d, want 2", n)
	}
	if ttl := rdb.PTTL(ctx, fence).Val(); ttl != -1 {
		t.Fatalf("fence counter expires (PTTL %v): it must only ever grow", ttl)
	}
}
