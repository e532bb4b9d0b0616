package daemon

import (
	"context"
	"time"

	"github.com/posedge/posedge/edge/health"
)

// How often the daemon reports into its health snapshot: in-memory state
// (the ledger's mode, the limiter, the replay's link) often, because it
// costs nothing; Redis, the Sentinels and the journal less often, because
// each probe is a round of network calls or a query.
const (
	reportEvery = 250 * time.Millisecond
	probeEvery  = 2 * time.Second
)

// reportState copies the subsystems' in-memory state into health.
func (d *Daemon) reportState() {
	d.health.SetLedger(d.ledger.Degraded())
	d.health.SetLimiter(d.limiter.FallbackActive(), d.limiter.FallbackHeldUntil(), int64(d.limiter.Denied()))
	rs := d.replay.Status()
	d.health.SetHQLink(health.HQLink{Connected: rs.Connected, LastSyncAt: rs.LastSyncAt, LastError: rs.LastError,
		RatePerSec: rs.RatePerSec, HQAnsweredAt: rs.HQAnsweredAt})
}

// probe asks Redis, the Sentinels and the journal, and reports what they said.
func (d *Daemon) probe(ctx context.Context) {
	d.health.SetRedis(probeRedis(ctx, d.cfg, d.rdb))
	_, err := d.j.Stats(ctx)
	if ctx.Err() == nil {
		d.health.SetJournal(err)
	}
}

// watchHealth reports into health until ctx ends. Readers (/readyz,
// /admin/v1/status) only read the snapshot: a status asked for while
// Redis hangs answers at once, with what the last probe saw.
func (d *Daemon) watchHealth(ctx context.Context) {
	go every(ctx, probeEvery, func() { d.probe(ctx) })
	every(ctx, reportEvery, d.reportState)
}

// every calls fn every period until ctx ends.
func every(ctx context.Context, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
