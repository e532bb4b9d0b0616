package testenv

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sentinel and replication reach every node as Redis users of their own,
// so a partition needs no proxy: switching a user off on one node and
// killing its connections there cuts that node off from the sentinels or
// from the other nodes' replication, while every other client (posedge,
// the tests, which use the default user) still reaches it.
const (
	SentinelUser    = "sentinel"
	ReplicationUser = "replication"
	aclPass         = "testenv-acl-pass"
)

// Cut switches the given users off on node i and closes their
// connections to it: with SentinelUser the sentinels no longer reach the
// node (they hold it down and fail over when it is the master); with
// ReplicationUser its replicas lose their link to it and cannot make it
// again (they keep what they had). Heal undoes it.
func (r *Redis) Cut(i int, users ...string) {
	r.t.Helper()
	r.acl(i, "off", users)
}

// Heal switches the given users on again on node i; the sentinels and
// replicas reconnect by themselves.
func (r *Redis) Heal(i int, users ...string) {
	r.t.Helper()
	r.acl(i, "on", users)
}

func (r *Redis) acl(i int, state string, users []string) {
	r.t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.NodeAddr(i), Password: r.Password, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, u := range users {
		if err := c.Do(ctx, "ACL", "SETUSER", u, state).Err(); err != nil {
			r.t.Fatalf("ACL SETUSER %s %s on %s: %v", u, state, r.Nodes[i].Name, err)
		}
		if state == "off" {
			if err := c.Do(ctx, "CLIENT", "KILL", "USER", u).Err(); err != nil && !strings.Contains(err.Error(), "No such") {
				r.t.Fatalf("CLIENT KILL USER %s on %s: %v", u, r.Nodes[i].Name, err)
			}
		}
	}
}

// SplitBrain cuts node i (the master) off from the sentinels and from its
// replicas while every other client still writes to it: the sentinels
// elect a new master and, until the clients follow, two nodes take
// writes. HealSplitBrain ends it; the sentinels then turn node i into a
// replica of the new master, which drops whatever it took meanwhile.
func (r *Redis) SplitBrain(i int) { r.t.Helper(); r.Cut(i, SentinelUser, ReplicationUser) }

// HealSplitBrain lets the sentinels and replicas reach node i again.
func (r *Redis) HealSplitBrain(i int) { r.t.Helper(); r.Heal(i, SentinelUser, ReplicationUser) }

// Role is node i's INFO replication role ("master", "slave") and its
// master_repl_offset; "" when it does not answer.
func (r *Redis) Role(i int) (string, int64) {
	c := redis.NewClient(&redis.Options{Addr: r.NodeAddr(i), Password: r.Password, DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	info, err := c.Info(context.Background(), "replication").Result()
	if err != nil {
		return "", 0
	}
	var role string
	var off int64
	for _, ln := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(ln, "role:"); ok {
			role = v
		}
		if v, ok := strings.CutPrefix(ln, "master_repl_offset:"); ok {
			off, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return role, off
}

// Get reads key on node i directly (a replica answers too); "" when the
// key is missing or the node does not answer.
func (r *Redis) Get(i int, key string) string {
	c := redis.NewClient(&redis.Options{Addr: r.NodeAddr(i), Password: r.Password, DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	v, _ := c.Get(context.Background(), key).Result()
	return v
}
