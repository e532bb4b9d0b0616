package lua

import (
	"context"
	"testing"

	"github.com/posedge/posedge/internal/testenv"
)

// The raw contract of ratelimit.lua (edge/ratelimit's tests cover the
// behaviour): the reply shape, and no level charged when one denies.
func TestRateLimitScript(t *testing.T) {
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	ctx := context.Background()
	s := MustScript("ratelimit.lua")
	keys := []string{"pe:{S}:promo", "pe:{S}:rl:t:T", "pe:{S}:rl:a:T:pay"}
	run := func(member string) []int64 {
		t.Helper()
		res, err := s.Run(ctx, rdb, keys, member, 10, 60000, "", 1, 60000, "pay").Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run("m1"); len(res) != 5 || res[0] != 1 || res[1] != 2 || res[2] != 1 || res[3] != 0 || res[4] < 59000 || res[4] > 60000 {
		t.Fatalf("first hit: %v, want {1, 2 (pay), 1, 0, ~60000}", res)
	}
	if res := run("m2"); res[0] != 0 || res[1] != 2 || res[3] != 0 {
		t.Fatalf("second hit: %v, want denied by level 2", res)
	}
	if n := rdb.ZCard(ctx, keys[1]).Val(); n != 1 {
		t.Fatalf("terminal level holds %d hits after a denied one, want 1", n)
	}
	if ttl := rdb.PTTL(ctx, keys[2]).Val(); ttl <= 0 {
		t.Fatalf("PTTL %v, want the window", ttl)
	}
}
