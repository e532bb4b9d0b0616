package lua

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// The windows stay on the master (redis.set_repl(REPL_NONE)): a replica
// gets none of the limiter's writes, yet everything else written beside
// them, and the promotion the script reads, still replicates. A promoted
// replica starts the windows empty (docs/design.md, "Redis keys").
func TestRateLimitWindowsStayOnTheMaster(t *testing.T) {
	rd := testenv.StartRedis(t, testenv.RedisOptions{})
	master, replica := rd.NodeClient(0), rd.NodeClient(1)
	ctx := context.Background()
	keys := []string{"pe:{S}:promo", "pe:{S}:rl:t:T", "pe:{S}:rl:a:T:pay"}
	if err := master.HSet(ctx, keys[0], "coef_micro", 2000000, "starts_at", 0, "actions", "").Err(); err != nil {
		t.Fatal(err)
	}
	res, err := MustScript("ratelimit.lua").Run(ctx, master, keys, "m1", 10, 60000, "", 1, 60000, "pay").Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	if res[0] != 1 || res[2] != 2 {
		t.Fatalf("hit under a ×2 promotion: %v, want allowed with the pay level's limit 2", res)
	}
	// A write after the script, waited for: once the replica has it, it
	// has every replicated write before it.
	if err := master.Set(ctx, "pe:{S}:marker", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := master.Wait(ctx, 2, 5*time.Second).Result(); err != nil || n != 2 {
		t.Fatalf("WAIT 2: %d replicas, %v", n, err)
	}
	for _, c := range []struct {
		name   string
		client *redis.Client
		key    string
		want   int64
	}{
		{"master", master, keys[1], 1},
		{"master", master, keys[2], 1},
		{"replica", replica, keys[1], 0},
		{"replica", replica, keys[2], 0},
		{"replica", replica, keys[0], 1},
		{"replica", replica, "pe:{S}:marker", 1},
	} {
		if n := c.client.Exists(ctx, c.key).Val(); n != c.want {
			t.Errorf("%s holds %s %d times, want %d", c.name, c.key, n, c.want)
		}
	}
}
