package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A nemesis restarts Redis processes after failovers: each comes back in
// the role the sentinels now give it, not its first command line's.
func TestRestartNodeInRoleFollowsTheSentinels(t *testing.T) {
	r := StartRedis(t, RedisOptions{})
	ctx := context.Background()
	role := func(i int) string {
		info, err := r.NodeClient(i).Info(ctx, "replication").Result()
		if err != nil {
			return err.Error()
		}
		for _, l := range strings.Split(info, "\r\n") {
			if strings.HasPrefix(l, "role:") || strings.HasPrefix(l, "master_port:") {
				info += " " + l
			}
		}
		return info
	}

	// The master dies and a replica is promoted: node 0, whose first
	// command line makes it a master, comes back a replica of the new one.
	r.KillNode(0)
	WaitFor(t, 30*time.Second, "a replica promoted", func() bool { return r.MasterIndex() > 0 })
	m := r.MasterIndex()
	r.RestartNodeInRole(0)
	if got := role(0); !strings.Contains(got, "role:slave") || !strings.Contains(got, fmt.Sprintf("master_port:%d", r.NodePorts[m])) {
		t.Fatalf("node 0 after its restart: %s; want a replica of node %d", got, m)
	}

	// Two sentinels die, then the new master: no failover can happen, so
	// it comes back a master (its first command line made it a replica of
	// node 0).
	for _, i := range r.ReplicaIndexes() {
		if i == m {
			t.Fatalf("ReplicaIndexes holds the master %d", m)
		}
	}
	r.KillSentinel(0)
	r.KillSentinel(1)
	r.KillNode(m)
	time.Sleep(2 * time.Second) // past down-after-milliseconds: no quorum to act on it
	r.RestartNodeInRole(m)
	if got := role(m); !strings.Contains(got, "role:master") {
		t.Fatalf("node %d after its restart without a failover: %s; want master", m, got)
	}
	r.RestartSentinel(0)
	r.RestartSentinel(1)
	r.WaitSentinelsAgree(30 * time.Second)
	if got := r.MasterIndex(); got != m {
		t.Fatalf("sentinels name node %d master, want %d", got, m)
	}
}
