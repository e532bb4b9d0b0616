package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the Sentinel master name every test topology uses.
const MasterName = "posedge"

// RedisOptions tune a topology.
type RedisOptions struct {
	Replicas  int      // default 2
	Sentinels int      // default 3
	ExtraArgs []string // appended to every redis-server command line
	// Partitionable gives the default user a password (Password), so that
	// Cut and SplitBrain can cut the sentinels off a node: a connection
	// whose AUTH fails is still the default user when that user needs no
	// password, and the sentinels would go on reaching the node as it.
	// Every client then needs the password; testenv's own clients and a
	// Store's posedge (redis.password) get it.
	Partitionable bool
}

// Redis is a real Redis Sentinel topology: one master, its replicas and
// the sentinels watching them, each a redis-server / redis-sentinel
// process on a free loopback port.
type Redis struct {
	t         testing.TB
	Dir       string
	Nodes     []*Proc
	NodePorts []int
	Sentinels []*Proc
	SentPorts []int
	extraArgs []string
	nodeArgs  [][]string
	// Password is the default user's password with
	// RedisOptions.Partitionable, else "".
	Password string
}

// StartRedis starts the topology and waits until every sentinel sees the
// master, all replicas and the other sentinels. Tests fail (never skip)
// when redis-server or redis-sentinel is not installed: .ci/run installs them.
func StartRedis(t testing.TB, o RedisOptions) *Redis {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-sentinel"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found on PATH (apt-get install redis-server redis-sentinel): %v", bin, err)
		}
	}
	if o.Replicas == 0 {
		o.Replicas = 2
	}
	if o.Sentinels == 0 {
		o.Sentinels = 3
	}
	r := &Redis{t: t, Dir: t.TempDir(), extraArgs: o.ExtraArgs}
	if o.Partitionable {
		r.Password = "testenv-default-pass"
	}
	t.Cleanup(r.Close)
	for i := 0; i <= o.Replicas; i++ {
		r.startNode(i)
	}
	WaitFor(t, 20*time.Second, "replicas online", func() bool {
		info, err := r.NodeClient(0).Info(context.Background(), "replication").Result()
		return err == nil && strings.Count(info, "state=online") == o.Replicas
	})
	for i := 0; i < o.Sentinels; i++ {
		r.startSentinel(i)
	}
	r.WaitSentinelsAgree(30 * time.Second)
	return r
}

// startNode starts node i, again on another port if the one picked was
// taken meanwhile (the process then exits at once: bind failed).
func (r *Redis) startNode(i int) {
	d := filepath.Join(r.Dir, fmt.Sprintf("redis%d", i))
	if err := os.MkdirAll(d, 0o755); err != nil {
		r.t.Fatal(err)
	}
	p := &Proc{Name: fmt.Sprintf("redis%d", i), Log: filepath.Join(r.Dir, fmt.Sprintf("redis%d.log", i))}
	for attempt := 0; ; attempt++ {
		port := FreePort(r.t)
		args := []string{"redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--dir", d, "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
			"--daemonize", "no", "--protected-mode", "no", "--maxmemory-policy", "noeviction"}
		// Sentinel and replication log in as users of their own (the
		// default user, which posedge and the tests use, stays open), so
		// a test can cut them off a node alone: Partition.
		args = append(args, "--user", SentinelUser, "on", ">"+aclPass, "+@all", "~*", "&*",
			"--user", ReplicationUser, "on", ">"+aclPass, "+@all", "~*", "&*",
			"--masteruser", ReplicationUser, "--masterauth", aclPass)
		if r.Password != "" {
			args = append(args, "--requirepass", r.Password)
		}
		if i > 0 {
			args = append(args, "--replicaof", "127.0.0.1", fmt.Sprint(r.NodePorts[0]))
		}
		p.Args = append(args, r.extraArgs...)
		p.Start(r.t)
		c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), Password: r.Password, DialTimeout: time.Second, MaxRetries: -1})
		up := false
		WaitFor(r.t, 10*time.Second, p.Name+" up", func() bool {
			up = c.Ping(context.Background()).Err() == nil
			return up || !p.Running()
		})
		c.Close()
		if up {
			if i < len(r.Nodes) {
				r.Nodes[i], r.NodePorts[i], r.nodeArgs[i] = p, port, p.Args
			} else {
				r.Nodes = append(r.Nodes, p)
				r.NodePorts = append(r.NodePorts, port)
				r.nodeArgs = append(r.nodeArgs, p.Args)
			}
			return
		}
		if attempt == 4 {
			r.t.Fatalf("%s did not start in 5 attempts:\n%s", p.Name, p.Tail(1500))
		}
	}
}

// startSentinel starts sentinel i, again on another port if the one
// picked was taken meanwhile.
func (r *Redis) startSentinel(i int) {
	conf := filepath.Join(r.Dir, fmt.Sprintf("sentinel%d.conf", i))
	p := &Proc{Name: fmt.Sprintf("sentinel%d", i), Args: []string{"redis-sentinel", conf},
		Log: filepath.Join(r.Dir, fmt.Sprintf("sentinel%d.log", i))}
	for attempt := 0; ; attempt++ {
		port := FreePort(r.t)
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\nprotected-mode no\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s 1000\n"+
			"sentinel failover-timeout %s 5000\n"+
			"sentinel parallel-syncs %s 1\n"+
			"sentinel auth-user %s %s\nsentinel auth-pass %s %s\n",
			port, r.Dir, MasterName, r.NodePorts[0], MasterName, MasterName, MasterName,
			MasterName, SentinelUser, MasterName, aclPass)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			r.t.Fatal(err)
		}
		p.Start(r.t)
		c := redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), DialTimeout: time.Second, MaxRetries: -1})
		up := false
		WaitFor(r.t, 10*time.Second, p.Name+" up", func() bool {
			up = c.Ping(context.Background()).Err() == nil
			return up || !p.Running()
		})
		c.Close()
		if up {
			r.Sentinels = append(r.Sentinels, p)
			r.SentPorts = append(r.SentPorts, port)
			return
		}
		if attempt == 4 {
			r.t.Fatalf("%s did not start in 5 attempts:\n%s", p.Name, p.Tail(1500))
		}
	}
}

// WaitSentinelsAgree waits until every sentinel has a quorum and sees all
// replicas and all other sentinels.
func (r *Redis) WaitSentinelsAgree(d time.Duration) {
	r.t.Helper()
	WaitFor(r.t, d, "sentinels agree on quorum, replicas and peers", func() bool {
		ctx := context.Background()
		for _, a := range r.SentinelAddrs() {
			c := redis.NewSentinelClient(&redis.Options{Addr: a})
			_, qerr := c.CkQuorum(ctx, MasterName).Result()
			reps, rerr := c.Replicas(ctx, MasterName).Result()
			sents, serr := c.Sentinels(ctx, MasterName).Result()
			c.Close()
			if qerr != nil || rerr != nil || serr != nil || len(reps) != len(r.Nodes)-1 || len(sents) != len(r.Sentinels)-1 {
				return false
			}
		}
		return true
	})
}

// SentinelAddrs lists the sentinels as host:port.
func (r *Redis) SentinelAddrs() []string {
	var a []string
	for _, p := range r.SentPorts {
		a = append(a, fmt.Sprintf("127.0.0.1:%d", p))
	}
	return a
}

// NodeAddr is node i as host:port.
func (r *Redis) NodeAddr(i int) string { return fmt.Sprintf("127.0.0.1:%d", r.NodePorts[i]) }

// NodeClient is a plain client to node i, closed with the test.
func (r *Redis) NodeClient(i int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.NodeAddr(i), Password: r.Password, DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})
	r.t.Cleanup(func() { c.Close() })
	return c
}

// Master is a Sentinel-aware client to whichever node is master, closed
// with the test.
func (r *Redis) Master() *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: MasterName, SentinelAddrs: r.SentinelAddrs(), Password: r.Password,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	r.t.Cleanup(func() { c.Close() })
	return c
}

// MasterIndex is the index of the node the first answering sentinel names
// master, or -1.
func (r *Redis) MasterIndex() int {
	for _, a := range r.SentinelAddrs() {
		c := redis.NewSentinelClient(&redis.Options{Addr: a, DialTimeout: 500 * time.Millisecond})
		addr, err := c.GetMasterAddrByName(context.Background(), MasterName).Result()
		c.Close()
		if err != nil {
			continue
		}
		for i, p := range r.NodePorts {
			if addr[1] == fmt.Sprint(p) {
				return i
			}
		}
	}
	return -1
}

// KillNode kills node i with SIGKILL.
func (r *Redis) KillNode(i int) { r.Nodes[i].Kill() }

// RestartNode starts a killed node again with its original arguments
// (same port, same dir, so it reloads its AOF). A former master comes back
// as a master until the sentinels reconfigure it.
func (r *Redis) RestartNode(i int) {
	r.Nodes[i].Kill()
	r.Nodes[i].Start(r.t)
	WaitFor(r.t, 15*time.Second, r.Nodes[i].Name+" back", func() bool {
		return r.NodeClient(i).Ping(context.Background()).Err() == nil
	})
}

// StopAll freezes every node (SIGSTOP); ContAll thaws them.
func (r *Redis) StopAll() {
	for _, p := range r.Nodes {
		p.Signal(syscall.SIGSTOP)
	}
}

// ContAll resumes every node frozen by StopAll.
func (r *Redis) ContAll() {
	for _, p := range r.Nodes {
		p.Signal(syscall.SIGCONT)
	}
}

// Close kills every process of the topology; logs are attached to a
// failed test.
func (r *Redis) Close() {
	for _, p := range append(append([]*Proc{}, r.Sentinels...), r.Nodes...) {
		p.Kill()
	}
	if r.t.Failed() {
		for _, p := range append(append([]*Proc{}, r.Nodes...), r.Sentinels...) {
			r.t.Logf("--- %s log tail:\n%s", p.Name, p.Tail(1500))
		}
	}
}

// StartRedisSingle starts one standalone redis-server, for tests of a
// Lua script that need no Sentinel.
func StartRedisSingle(t testing.TB, extraArgs ...string) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found on PATH (apt-get install redis-server): %v", err)
	}
	r := &Redis{t: t, Dir: t.TempDir(), extraArgs: extraArgs}
	t.Cleanup(r.Close)
	r.startNode(0)
	return r
}
