package daemon

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/posedge/posedge/offline/journal"
)

// quickCheckEvery is how often the journal's quick_check runs after the
// one right after start. It reads every page (seconds on a large
// journal, one core busy), so daily: a disk going bad is found within a
// day, and at every start.
const quickCheckEvery = 24 * time.Hour

// integrityLoop runs the journal's quick_check behind the tills: once
// right after start, then every `every`, on a reader connection (sales
// go on meanwhile). Start-up does not wait for it: a restart on a
// journal of millions of sales sells at once instead of after the
// seconds the check takes (docs/durability.md, Start-up). When it finds
// the journal damaged the journal takes no write any more, so sales are
// answered 503 journal_unavailable; the finding is reported to health
// at once (status CRIT, /readyz fails), logged as an ERROR and counted
// in posedge_journal_damaged; the check stops: nothing heals a damaged
// file but `posedge journal salvage`.
func (d *Daemon) integrityLoop(ctx context.Context, every time.Duration) {
	checks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "posedge_journal_quick_checks_total",
		Help: "Background quick_checks of the journal, by result (ok, damaged, failed: could not run)."}, []string{"result"})
	seconds := prometheus.NewGauge(prometheus.GaugeOpts{Name: "posedge_journal_quick_check_seconds",
		Help: "How long the last background quick_check of the journal took."})
	for _, r := range []string{"ok", "damaged", "failed"} {
		checks.WithLabelValues(r)
	}
	d.reg.MustRegister(checks, seconds, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "posedge_journal_damaged",
		Help: "1 once the journal's quick_check found it damaged: sales are refused (503 journal_unavailable) until it is salvaged."},
		func() float64 {
			if d.j.Damaged() != nil {
				return 1
			}
			return 0
		}))
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		err := d.j.QuickCheck(ctx)
		took := time.Since(start)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, journal.ErrDamaged):
			checks.WithLabelValues("damaged").Inc()
			seconds.Set(took.Seconds())
			d.health.ReportJournal(err)
			d.log.Error("journal damaged: refusing sales (503 journal_unavailable) — stop the service and run `posedge journal salvage` (it keeps the damaged file)",
				"path", d.j.Path(), "quick_check", err.Error(), "took", took.Round(time.Millisecond).String())
			return
		case err != nil:
			checks.WithLabelValues("failed").Inc()
			d.log.Warn("journal quick_check could not run; trying again in a minute", "path", d.j.Path(), "err", err)
			t.Reset(time.Minute)
			continue
		}
		checks.WithLabelValues("ok").Inc()
		seconds.Set(took.Seconds())
		d.log.Info("journal quick_check ok", "path", d.j.Path(), "took", took.Round(time.Millisecond).String())
		t.Reset(every)
	}
}
