package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/edge/health"
	"github.com/posedge/posedge/edge/status"
	"github.com/posedge/posedge/internal/testenv"
)

// A real Redis behind a link that passes, then delays, then is cut: the
// probe reports what it saw into health, and status judges it OK, WARN
// with the latency (every call near redis.timeout), then CRIT.
func TestRedisProbeReportsLatency(t *testing.T) {
	rd := testenv.StartRedisSingle(t)
	proxy := testenv.StartFaultProxy(t, rd.NodeAddr(0))
	cfg := config.Defaults()
	cfg.Redis.Addr, cfg.Redis.Sentinels, cfg.Redis.Replicas = proxy.Addr(), nil, 0
	cfg.Redis.Timeout, cfg.Redis.WaitTimeout = config.Dur(300*time.Millisecond), config.Dur(100*time.Millisecond)
	rdb := NewRedis(&cfg)
	defer rdb.Close()
	th := status.ThresholdsOf(&cfg)
	tr := health.New(nil)
	ctx := context.Background()

	judge := func() (status.Report, status.Check) {
		tr.ReportRedis(probeRedis(ctx, &cfg, rdb))
		r := status.Evaluate(status.FromSnapshot(time.Now(), tr.Snapshot()), th)
		var c status.Check
		for _, ch := range r.Checks {
			if ch.Name == "redis_latency" || (ch.Name == "redis" && ch.Status != status.OK) {
				c = ch
			}
		}
		return r, c
	}

	r, c := judge()
	if !r.Redis.OK || c.Status != status.OK || r.Redis.LatencyMS <= 0 || r.Redis.LatencyMS >= 150 {
		t.Fatalf("redis on a clean link: %+v, check %+v", r.Redis, c)
	}

	proxy.Set(testenv.Delay, 100*time.Millisecond) // 200 ms a round trip: two thirds of redis.timeout
	r, c = judge()
	if !r.Redis.OK || c.Status != status.Warn || r.Redis.LatencyMS < 200 {
		t.Fatalf("redis on a slow link: %+v, check %+v", r.Redis, c)
	}
	t.Logf("slow link: %s", c.Detail)

	proxy.Set(testenv.BlackHole, 0)
	start := time.Now()
	r, c = judge()
	if r.Redis.OK || c.Name != "redis" || c.Status != status.Crit {
		t.Fatalf("redis black-holed: %+v, check %+v", r.Redis, c)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("a probe of a hung Redis took %v", took)
	}
}

// A replica killed on a real Sentinel topology: the probe names it, so
// the WARN line tells the technician which redis-server to look at.
func TestRedisProbeNamesTheDownReplica(t *testing.T) {
	rd := testenv.StartRedis(t, testenv.RedisOptions{})
	cfg := config.Defaults()
	cfg.Redis.Sentinels, cfg.Redis.MasterName = rd.SentinelAddrs(), "posedge"
	cfg.Redis.Timeout, cfg.Redis.WaitTimeout = config.Dur(time.Second), config.Dur(100*time.Millisecond)
	rdb := NewRedis(&cfg)
	defer rdb.Close()
	ctx := context.Background()
	if f := probeRedis(ctx, &cfg, rdb); !f.OK || f.Replicas != 2 || len(f.DownReplicas) != 0 {
		t.Fatalf("healthy topology probed as %+v", f)
	}
	victim := (rd.MasterIndex() + 1) % 3
	rd.KillNode(victim)
	var last health.Redis
	testenv.WaitFor(t, 30*time.Second, "probe names the killed replica", func() bool {
		last = probeRedis(ctx, &cfg, rdb)
		return len(last.DownReplicas) == 1 && last.DownReplicas[0] == rd.NodeAddr(victim)
	})
	tr := health.New(nil)
	tr.ReportRedis(last)
	r := status.Evaluate(status.FromSnapshot(time.Now(), tr.Snapshot()), status.ThresholdsOf(&cfg))
	for _, c := range r.Checks {
		if c.Name == "replicas" {
			if c.Status != status.Warn || !strings.Contains(c.Detail, rd.NodeAddr(victim)) {
				t.Fatalf("replicas check %+v, want WARN naming %s", c, rd.NodeAddr(victim))
			}
			return
		}
	}
	t.Fatalf("no replicas check in %+v (last probe %+v)", r.Checks, last)
}
