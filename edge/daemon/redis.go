package daemon

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/edge/health"
)

// NewRedis connects through the Sentinels (or to redis.addr) with short
// timeouts: a till must never wait seconds for a Redis that is gone.
// RouteByLatency/RouteRandomly stay off (NewFailoverClient panics with them).
func NewRedis(c *config.Config) redis.UniversalClient {
	timeout := c.Redis.Timeout.D()
	if c.Redis.Addr != "" {
		return redis.NewClient(&redis.Options{Addr: c.Redis.Addr, Password: c.Redis.Password,
			DialTimeout: timeout, ReadTimeout: timeout + c.Redis.WaitTimeout.D(), WriteTimeout: timeout,
			PoolTimeout: timeout, MaxRetries: 1, ContextTimeoutEnabled: true})
	}
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName: c.Redis.MasterName, SentinelAddrs: c.Redis.Sentinels,
		SentinelPassword: c.Redis.SentinelPassword, Password: c.Redis.Password,
		DialTimeout: timeout, ReadTimeout: timeout + c.Redis.WaitTimeout.D(), WriteTimeout: timeout,
		PoolTimeout: timeout, MaxRetries: 1, ContextTimeoutEnabled: true,
	})
}

// probeRedis asks the Sentinels and the master what status needs, and
// times the master's calls: the fastest of them is the latency reported
// (when even that one is slow, every call is).
func probeRedis(ctx context.Context, c *config.Config, rdb redis.UniversalClient) health.Redis {
	f := health.Redis{WantReplicas: c.Redis.Replicas, SentinelsAll: len(c.Redis.Sentinels)}
	for _, a := range c.Redis.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: a, Password: c.Redis.SentinelPassword,
			DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
		addr, err := sc.GetMasterAddrByName(ctx, c.Redis.MasterName).Result()
		if err == nil && len(addr) == 2 {
			f.Sentinels++
			if f.Master == "" {
				f.Master = addr[0] + ":" + addr[1]
				f.DownReplicas = downReplicas(ctx, sc, c.Redis.MasterName)
			}
		}
		sc.Close()
	}
	if c.Redis.Addr != "" {
		f.Master = c.Redis.Addr
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	timed := func(call func() error) error {
		start := time.Now()
		err := call()
		if d := time.Since(start); err == nil && (f.Latency == 0 || d < f.Latency) {
			f.Latency = d
		}
		return err
	}
	var info string
	if err := timed(func() (err error) { info, err = rdb.Info(ctx, "replication", "memory").Result(); return err }); err != nil {
		f.Error = err.Error()
		return f
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			fields[k] = v
		}
		if strings.HasPrefix(k, "slave") && strings.Contains(v, "state=online") {
			f.Replicas++
			for _, kv := range strings.Split(v, ",") {
				if lag, ok := strings.CutPrefix(kv, "lag="); ok {
					if n, err := strconv.ParseInt(lag, 10, 64); err == nil && n > f.MaxLagSeconds {
						f.MaxLagSeconds = n
					}
				}
			}
		}
	}
	f.UsedMemory, _ = strconv.ParseInt(fields["used_memory"], 10, 64)
	f.MaxMemory, _ = strconv.ParseInt(fields["maxmemory"], 10, 64)
	if fields["role"] != "master" {
		f.Error = fmt.Sprintf("the node answering is a %s, not the master", fields["role"])
		return f
	}
	var t time.Time
	if err := timed(func() (err error) { t, err = rdb.Time(ctx).Result(); return err }); err == nil {
		f.ClockSkew = time.Since(t)
	}
	_ = timed(func() error { return rdb.Ping(ctx).Err() })
	f.OK = true
	return f
}

// downReplicas asks a Sentinel which of the replicas it knows it sees down
// or disconnected, so the status line can name the one to look at.
func downReplicas(ctx context.Context, sc *redis.SentinelClient, master string) []string {
	reps, err := sc.Replicas(ctx, master).Result()
	if err != nil {
		return nil
	}
	var down []string
	for _, r := range reps {
		flags := r["flags"]
		if strings.Contains(flags, "s_down") || strings.Contains(flags, "o_down") || strings.Contains(flags, "disconnected") ||
			(r["master-link-status"] != "" && r["master-link-status"] != "ok") {
			down = append(down, net.JoinHostPort(r["ip"], r["port"]))
		}
	}
	sort.Strings(down)
	return down
}
