package testenv

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file holds what a nemesis (a test injecting faults at random,
// several at once) needs beyond the single faults of the other files:
// bringing each Redis process back in the role the sentinels give it
// now, whatever failovers happened while it was down.

// RestartNodeInRole starts a killed node again (same port and dir, so it
// reloads its AOF) and makes it what the sentinels now hold it to be: the
// master again when no failover happened while it was down, else a
// replica of the master they name. RestartNode alone brings a node back
// with its first command line, which after failovers can make it a
// master beside the real one or a replica of a replica of itself.
func (r *Redis) RestartNodeInRole(i int) {
	r.t.Helper()
	// Not RestartNode: its NodeClient per poll stays open until the test
	// ends, and a nemesis restarts nodes hundreds of times.
	r.Nodes[i].Kill()
	r.Nodes[i].Start(r.t)
	c := redis.NewClient(&redis.Options{Addr: r.NodeAddr(i), Password: r.Password, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})
	defer c.Close()
	WaitFor(r.t, 15*time.Second, r.Nodes[i].Name+" back", func() bool {
		return c.Ping(context.Background()).Err() == nil
	})
	m := r.MasterIndex()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	// A node restarted on a large AOF answers PING but refuses REPLICAOF
	// with LOADING until its dataset is in memory (seen 28 minutes into
	// the 30-minute nemesis): wait that out, nothing else.
	for {
		switch {
		case m == i:
			err = c.Do(ctx, "REPLICAOF", "NO", "ONE").Err()
		case m >= 0:
			err = c.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(r.NodePorts[m])).Err()
		}
		if err == nil || !strings.HasPrefix(err.Error(), "LOADING") || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		r.t.Fatalf("set the role of %s after its restart: %v", r.Nodes[i].Name, err)
	}
}

// ReplicaIndexes are the nodes other than the one the sentinels name
// master (every node when none answers).
func (r *Redis) ReplicaIndexes() []int {
	m := r.MasterIndex()
	var out []int
	for i := range r.Nodes {
		if i != m {
			out = append(out, i)
		}
	}
	return out
}

// KillSentinel kills sentinel i with SIGKILL.
func (r *Redis) KillSentinel(i int) { r.Sentinels[i].Kill() }

// RestartSentinel starts a killed sentinel again with the configuration
// it rewrote while it ran (same port, the topology it last knew) and
// waits until it answers.
func (r *Redis) RestartSentinel(i int) {
	r.t.Helper()
	r.Sentinels[i].Kill()
	r.Sentinels[i].Start(r.t)
	c := redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.SentPorts[i]), DialTimeout: time.Second, MaxRetries: -1})
	defer c.Close()
	WaitFor(r.t, 15*time.Second, r.Sentinels[i].Name+" back", func() bool {
		return c.Ping(context.Background()).Err() == nil
	})
}
