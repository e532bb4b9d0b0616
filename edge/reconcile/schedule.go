package reconcile

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/posedge/posedge/offline/journal"
)

// CheckFlowGaps looks for normal-mode flow numbers the journal never got:
// numbers below the highest journaled more than GapSettle ago that are
// still missing. Each is counted once (posedge_flow_gaps_total, a log
// line); the journal remembers how far it checked. It returns the gaps
// found now and the sequence number checked up to.
//
// A gap means a sale's script ran in Redis but its answer was never
// journaled (a crash whose record a failover lost). Two daemons sharing
// one Redis see each other's numbers as gaps: with a peer seen, gaps are
// not counted.
func (r *Reconciler) CheckFlowGaps(ctx context.Context) (int64, int64, error) {
	r.gapMu.Lock()
	defer r.gapMu.Unlock()
	hwm, err := r.j.MetaInt(ctx, journal.MetaGapCheckedSeq)
	if err != nil {
		return 0, 0, err
	}
	if hwm == 0 {
		if hwm, err = r.j.MinSeq(ctx); err != nil || hwm == 0 {
			return 0, 0, err // nothing journaled in normal mode yet
		}
	}
	pruned, err := r.j.MetaInt(ctx, journal.MetaPrunedMaxSeq)
	if err != nil {
		return 0, 0, err
	}
	hwm = max(hwm, pruned)
	settled, err := r.j.MaxSeqJournaledBefore(ctx, r.now().Add(-r.cfg.GapSettle))
	if err != nil {
		return 0, 0, err
	}
	if settled <= hwm {
		return 0, hwm, nil
	}
	gaps, err := r.j.SeqGaps(ctx, hwm, settled)
	if err != nil {
		return 0, 0, err
	}
	var n int64
	for _, g := range gaps {
		n += g.To - g.From + 1
	}
	if n > 0 {
		if r.peerRecently(ctx) {
			r.log.Debug("flow numbers missing from this journal: another daemon shares this Redis and holds them", "count", n)
			n = 0
		} else {
			r.m.gaps.Add(float64(n))
			for i, g := range gaps {
				if i == 10 {
					r.log.Warn("more flow-number gaps", "runs", len(gaps)-10)
					break
				}
				r.log.Warn("flow numbers issued by redis were never journaled (a sale's answer was lost)",
					"from", flowNo(g.From), "to", flowNo(g.To), "count", g.To-g.From+1)
			}
		}
	}
	if err := r.j.SetMeta(ctx, journal.MetaGapCheckedSeq, strconv.FormatInt(settled, 10)); err != nil {
		return n, hwm, err
	}
	return n, settled, nil
}

// postponedRetry is how soon a run Redis or the lock kept from happening
// is tried again.
const postponedRetry = 2 * time.Second

func flowNo(seq int64) string {
	s := strconv.FormatInt(seq, 10)
	for len(s) < 15 {
		s = "0" + s
	}
	return "1" + s
}

// peerRecently samples whether another daemon pings this Redis and tells
// whether one did within the last hour.
func (r *Reconciler) peerRecently(ctx context.Context) bool {
	r.peerMu.Lock()
	defer r.peerMu.Unlock()
	if p, err := r.l.PeerSeen(ctx); err == nil && p {
		r.peerAt = r.now()
	}
	return !r.peerAt.IsZero() && r.now().Sub(r.peerAt) < time.Hour
}

// Loop runs the reconciliation at start, after each business day ends
// (DayEndDelay past local midnight: the day that ended and today) and the
// continuity check hourly, until ctx ends. A run Redis or the lock keeps
// from happening is retried every postponedRetry (a daemon starts
// degraded until its start-up recovery hands over to Redis, moments
// later: the start's run must not wait a minute for that), one that
// failed otherwise every minute.
func (r *Reconciler) Loop(ctx context.Context) {
	pending, why := r.DefaultDays(), "start"
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	dayEnd := time.NewTimer(r.untilDayEnd())
	defer dayEnd.Stop()
	lastGaps := r.now()
	for {
		var retry <-chan time.Time
		if pending != nil {
			rep, err := r.Run(ctx, pending)
			switch {
			case err == nil:
				r.log.Info("reconciliation done", "why", why, "days", rep.Days, "differences", rep.Differences,
					"corrected", rep.Corrected, "unconfirmed", rep.Unconfirmed, "skipped", rep.Skipped, "flow_gaps", rep.FlowGaps)
				pending = nil
			case ctx.Err() != nil:
				return
			case errors.Is(err, ErrRedisDown) || errors.Is(err, ErrRunning):
				r.log.Debug("reconciliation postponed", "why", why, "err", err)
				retry = time.After(postponedRetry)
			default:
				r.log.Warn("reconciliation failed; retrying in a minute", "why", why, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-retry:
		case <-tick.C:
			r.peerRecently(ctx)
			if r.now().Sub(lastGaps) >= time.Hour {
				lastGaps = r.now()
				if _, _, err := r.CheckFlowGaps(ctx); err != nil {
					r.log.Warn("flow-number continuity check", "err", err)
				}
			}
		case <-dayEnd.C:
			ended := r.l.Day(r.now().Add(-r.cfg.DayEndDelay - time.Minute))
			pending, why = dedup(append(pending, ended, r.l.Day(r.now()))), "business day ended"
			dayEnd.Reset(r.untilDayEnd())
		}
	}
}

// untilDayEnd is the time until the next local midnight plus DayEndDelay.
func (r *Reconciler) untilDayEnd() time.Duration {
	now := r.now().In(r.l.Location())
	next := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location()).Add(r.cfg.DayEndDelay)
	if !next.After(now) {
		next = time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, now.Location()).Add(r.cfg.DayEndDelay)
	}
	return next.Sub(now)
}
