package testenv

import (
	"context"
	"testing"
	"time"
)

// SplitBrain leaves the master reachable to ordinary clients while the
// sentinels elect another; HealSplitBrain makes it a replica again.
func TestSplitBrainElectsASecondMaster(t *testing.T) {
	r := StartRedis(t, RedisOptions{Partitionable: true})
	ctx := context.Background()
	r.SplitBrain(0)
	WaitFor(t, 30*time.Second, "another node master", func() bool {
		for i := 1; i < len(r.Nodes); i++ {
			if role, _ := r.Role(i); role == "master" {
				return true
			}
		}
		return false
	})
	if role, _ := r.Role(0); role != "master" {
		t.Fatalf("the cut-off node is %q, want still master", role)
	}
	if err := r.NodeClient(0).Set(ctx, "k", "taken by the old master", 0).Err(); err != nil {
		t.Fatalf("the cut-off master refused a write: %v", err)
	}
	r.HealSplitBrain(0)
	WaitFor(t, 30*time.Second, "the old master turned replica", func() bool {
		role, _ := r.Role(0)
		return role == "slave"
	})
	WaitFor(t, 15*time.Second, "the old master's write dropped", func() bool { return r.Get(0, "k") == "" })
}
