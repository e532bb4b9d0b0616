package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/api"
	"github.com/posedge/posedge/edge/catalog"
	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/edge/health"
	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/ratelimit"
	"github.com/posedge/posedge/edge/reconcile"
	"github.com/posedge/posedge/internal/httpguard"
	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/replay"
)

// Daemon is one running posedge.
type Daemon struct {
	cfg     *config.Config
	version string
	log     *slog.Logger
	started time.Time

	rdb     redis.UniversalClient
	j       *journal.Journal
	ledger  *ledger.Ledger
	limiter *ratelimit.Limiter
	replay  *replay.Replayer
	catalog *catalog.Watcher
	rec     *reconcile.Reconciler
	seen    *api.LastSeen
	health  *health.Tracker
	reg     *prometheus.Registry
	ready   atomic.Bool
}

// Run starts posedge and serves until ctx ends, then shuts down cleanly:
// listeners first, so no sale is cut between journal and answer.
func Run(ctx context.Context, cfg *config.Config, version string, log *slog.Logger) error {
	d := &Daemon{cfg: cfg, version: version, log: log, started: time.Now(), seen: api.NewLastSeen(),
		health: health.New(nil), reg: prometheus.NewRegistry()}
	d.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m := newDaemonMetrics(d.reg, version)
	j, err := journal.Open(ctx, cfg.Journal.Path, journal.Options{Logger: log, MaxPageCount: cfg.Journal.MaxBytes / journalPageSize,
		OnCommit: m.observeCommit})
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	d.j = j
	defer j.Close()

	d.rdb = NewRedis(cfg)
	defer d.rdb.Close()

	acts := map[string]ratelimit.Policy{}
	for k, p := range cfg.Limits.Actions {
		acts[k] = ratelimit.Policy{Limit: p.Limit, Window: p.Window.D()}
	}
	d.limiter, err = ratelimit.New(d.rdb, ratelimit.Config{StoreID: cfg.StoreID,
		Store:    ratelimit.Policy{Limit: cfg.Limits.Store.Limit, Window: cfg.Limits.Store.Window.D()},
		Terminal: ratelimit.Policy{Limit: cfg.Limits.Terminal.Limit, Window: cfg.Limits.Terminal.Window.D()},
		Actions:  acts, FallbackFraction: cfg.Limits.FallbackFraction, RedisTimeout: cfg.Redis.Timeout.D()}, log, d.reg)
	if err != nil {
		return fmt.Errorf("rate limiter: %w", err)
	}
	d.ledger, err = ledger.New(ctx, ledger.Config{StoreID: cfg.StoreID, NodeID: cfg.NodeID, Location: cfg.Location(), MaxSaleCents: cfg.MaxSaleCents,
		RedisTimeout: cfg.Redis.Timeout.D(), MinReplicasAck: *cfg.Redis.MinReplicasAck, WaitTimeout: cfg.Redis.WaitTimeout.D(),
		Health: d.health},
		d.rdb, j, log, d.reg)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	d.rec = reconcile.New(reconcile.Config{Retention: cfg.Journal.Retention.D()}, d.ledger, j, log, d.reg)
	d.replay, err = replay.New(replay.Config{StoreID: cfg.StoreID, NATSURL: cfg.HQ.NATSURL, CredsFile: cfg.HQ.CredsFile,
		CAFile: cfg.HQ.CAFile, CertFile: cfg.HQ.CertFile, KeyFile: cfg.HQ.KeyFile, SubjectPrefix: cfg.HQ.SubjectPrefix,
		BatchSize: cfg.HQ.BatchSize, BatchBytes: cfg.HQ.BatchBytes, AckTimeout: cfg.HQ.AckTimeout.D(),
		ConfirmAfter: cfg.HQ.ConfirmAfter.D(), JournalRetention: cfg.Journal.Retention.D(), Version: version, Location: cfg.Location(), StartJitter: replay.DefaultStartJitter, Pace: syncPace(cfg), Health: d.health,
		TestClockSkew: testClockSkew(log)}, j, d.limiter, log, d.reg)
	if err != nil {
		return fmt.Errorf("hq replay: %w", err)
	}

	// The catalog watch reads HQ over the replay's connection: one
	// connection to HQ, one set of options (sync/hqlink).
	d.catalog = catalog.New(catalog.Config{StoreID: cfg.StoreID, Bucket: cfg.HQ.CatalogBucket}, d.replay.Link(), d.ledger, log, d.reg)

	adminToken, err := cfg.AdminToken()
	if err != nil {
		return fmt.Errorf("admin.token_file: %w", err)
	}
	m.watchReplay(d.reg, d.replay)
	httpMetrics := api.NewHTTPMetrics(d.reg)
	termDeps := api.TerminalDeps{Keys: cfg.TerminalKeys(), Ledger: d.ledger, Limiter: d.limiter,
		Guard: ratelimit.NewAuthGuard(10, time.Minute, time.Now), Log: log, Seen: d.seen, HTTP: httpMetrics,
		Quota: api.NewByteQuota(int64(cfg.Limits.TerminalBytes.Limit), cfg.Limits.TerminalBytes.Window.D(), time.Now, d.reg)}
	term := api.NewTerminal(termDeps)
	admin := api.NewAdmin(api.AdminDeps{Token: adminToken, Ledger: d.ledger, Limiter: d.limiter,
		Metrics: promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{}), Ready: d.readyErr,
		Status: func(ctx context.Context) any { return d.Status(ctx) }, SyncNow: d.replay.Kick,
		Reconciler: d.rec, Manifests: d.replay, Log: log, HTTP: httpMetrics})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 4)
	srvs, err := newServers(cfg, term, admin)
	if err != nil {
		return err
	}
	srvs.terminals = func(keys map[string]string) http.Handler { termDeps.Keys = keys; return api.NewTerminal(termDeps) }
	termSrv, adminSrv := srvs.term, srvs.admin
	srvs.reloadOnHUP(ctx, log)
	termLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s (listen): %w", cfg.Listen, err)
	}
	adminLn, err := net.Listen("tcp", cfg.Admin.Listen)
	if err != nil {
		termLn.Close()
		return fmt.Errorf("listen %s (admin.listen): %w", cfg.Admin.Listen, err)
	}
	go func() { errc <- httpguard.Serve(adminSrv, adminLn) }()

	// Serve first, recover behind (docs/durability.md, Start-up): the
	// tills are served at once in degraded mode, whatever Redis's state
	// and however large the backlog; start-up recovery (sales a crash
	// left in Redis only journaled, the sequence raised, the degraded
	// backlog applied) runs behind them and hands over to Redis when done.
	d.ledger.SetRedisDown(true)
	go func() { errc <- httpguard.Serve(termSrv, termLn) }()
	log.Info("posedge serving terminals in degraded mode while start-up recovery runs", "listen", cfg.Listen)
	go d.ledger.Recover(ctx, 500*time.Millisecond)
	// The store-wide jobs stop before the daemon exits, so a reconciliation
	// cut short by shutdown releases its lock instead of holding it until
	// it expires.
	var jobs sync.WaitGroup
	jobs.Go(func() { d.rec.Loop(ctx) })
	jobs.Go(func() { d.pruneLoop(ctx) })
	jobs.Go(func() { d.integrityLoop(ctx, quickCheckEvery) })
	// The first reports before ready: /readyz and status never read an
	// empty snapshot.
	d.health.Probe(ctx, d.probes())
	go d.health.Watch(ctx, d.probes())
	go func() {
		if err := d.replay.Run(ctx); err != nil && ctx.Err() == nil {
			errc <- fmt.Errorf("hq replay: %w", err)
		}
	}()
	go func() {
		if err := d.catalog.Run(ctx); err != nil && ctx.Err() == nil {
			errc <- fmt.Errorf("hq catalog: %w", err)
		}
	}()
	d.ready.Store(true)
	log.Info("posedge serving", "store_id", cfg.StoreID, "listen", cfg.Listen, "admin", cfg.Admin.Listen, "version", version)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	d.ready.Store(false)
	shut, cancelShut := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelShut()
	_ = termSrv.Shutdown(shut)
	_ = adminSrv.Shutdown(shut)
	cancel()
	jobsDone := make(chan struct{})
	go func() { jobs.Wait(); close(jobsDone) }()
	select {
	case <-jobsDone:
	case <-shut.Done():
	}
	log.Info("posedge stopped")
	return runErr
}

// syncPace spreads the replay's batches over the sync policy at the
// fallback limiter's rate, so a trickle of sales never exhausts the
// budget a backlog will need (see replay.Config.Pace).
func syncPace(cfg *config.Config) time.Duration {
	p := cfg.Limits.Actions[ratelimit.ActionSync]
	n := int(float64(p.Limit) * cfg.Limits.FallbackFraction)
	if n < 1 {
		n = 1
	}
	return p.Window.D() / time.Duration(n)
}

// readyErr reads the health snapshot: nil when the daemon serves in
// normal mode with a usable journal.
func (d *Daemon) readyErr(context.Context) error {
	// A damaged journal first: it is what a technician must act on, and
	// start-up recovery may never finish on it (it reads the journal).
	s := d.health.Snapshot()
	if s.Journal.Error != "" {
		return fmt.Errorf("journal: %s", s.Journal.Error)
	}
	if !d.ready.Load() {
		return errors.New("starting: recovery not finished")
	}
	if s.Ledger.Degraded {
		return errors.New("redis unavailable: serving in degraded mode")
	}
	return nil
}

// journalPageSize is SQLite's default page size, which journal.max_bytes
// is counted in.
const journalPageSize = 4096

// pruneLoop deletes, hourly, journal rows journaled more than
// journal.retention ago that posedge-hq confirmed storing; rows HQ has
// not confirmed (JetStream's ack is not enough) are never deleted.
func (d *Daemon) pruneLoop(ctx context.Context) {
	pruned := prometheus.NewCounter(prometheus.CounterOpts{Name: "posedge_journal_pruned_rows_total",
		Help: "Journal rows deleted after journal.retention (confirmed stored by posedge-hq only)."})
	d.reg.MustRegister(pruned)
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		cutoff := time.Now().Add(-d.cfg.Journal.Retention.D())
		n, err := d.j.Prune(ctx, cutoff)
		pruned.Add(float64(n))
		switch {
		case err != nil && ctx.Err() == nil:
			d.log.Warn("prune the journal", "err", err, "deleted", n)
		case n > 0:
			d.log.Info("pruned delivered journal rows past retention", "deleted", n, "before", cutoff.UTC().Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// TestClockSkewEnv names the test-only environment variable that shifts
// the clock the heartbeat reports (a Go duration, "9s", "-1m"), so that
// an end-to-end test can show HQ's clock offset estimate with a real
// daemon. Never set it in production: HQ would report the store's clock
// off.
const TestClockSkewEnv = "POSEDGE_TEST_CLOCK_SKEW"

func testClockSkew(log *slog.Logger) time.Duration {
	v := os.Getenv(TestClockSkewEnv)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		log.Warn("ignored: not a duration", "env", TestClockSkewEnv, "value", v)
		return 0
	}
	log.Warn("TEST ONLY: heartbeats report a shifted clock", "env", TestClockSkewEnv, "skew", d)
	return d
}
