package daemon

import (
	"context"
	"time"

	"github.com/posedge/posedge/edge/health"
	"github.com/posedge/posedge/edge/status"
)

// probes are what the health prober asks: Redis and the Sentinels, and
// whether the journal answers (and was not found damaged). The ledger
// reports its mode itself, the replay its publishes and acks (both
// through their Config.Health).
func (d *Daemon) probes() health.Probes {
	return health.Probes{
		Redis: func(ctx context.Context) health.Redis { return probeRedis(ctx, d.cfg, d.rdb) },
		// Ping, not Stats: Stats counts every row (seconds on a journal
		// of millions), and the first probe holds readiness.
		Journal: func(ctx context.Context) error {
			if err := d.j.Damaged(); err != nil {
				return err
			}
			return d.j.Ping(ctx)
		},
	}
}

// Status judges the health facts with what is read when asked: the
// in-memory state of the limiter, the replay and the catalog watch (free
// to read, so never copied), and the journal's own figures (one local
// query, the same the status command reads when the daemon is down).
func (d *Daemon) Status(ctx context.Context) status.Report {
	now := time.Now()
	f := status.FromSnapshot(now, d.health.Snapshot())
	f.Version, f.StoreID, f.UptimeSeconds = d.version, d.cfg.StoreID, int64(time.Since(d.started)/time.Second)
	f.Terminals, f.Reconciliation = d.seen.Snapshot(), d.rec.Differences()
	f.Plaintext = d.cfg.PlaintextWarnings()
	f.Limiter = health.Limiter{SeenAt: now, Fallback: d.limiter.FallbackActive(), HeldUntil: d.limiter.FallbackHeldUntil(),
		Denied: int64(d.limiter.Denied())}
	rs := d.replay.Status()
	f.HQ.SeenAt, f.HQ.Connected, f.HQ.LastSyncAt, f.HQ.LastError = now, rs.Connected, rs.LastSyncAt, rs.LastError
	f.HQ.RatePerSec, f.HQ.HQAnsweredAt = rs.RatePerSec, rs.HQAnsweredAt
	f.Journal, f.HQ = health.ReadJournal(ctx, d.j, f.HQ)
	cs := d.catalog.State()
	f.Catalog = &health.Catalog{SeenAt: now, Revision: cs.Revision, AppliedAt: cs.AppliedAt, Watching: cs.Watching, DownSince: cs.DownSince}
	return status.Evaluate(f, status.ThresholdsOf(d.cfg))
}
