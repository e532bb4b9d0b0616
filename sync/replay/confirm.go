package replay

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/offline/journal"
)

// Delivery confirmation (docs/hq-sync.md, "Delivery"). JetStream's ack
// is not the end of a row's way: the stream can lose what it acked (a
// power loss inside its fsync interval, a stream deleted and made
// again, a purge), and an ack with duplicate: true may stand for another
// message under the same Nats-Msg-Id. So the store asks posedge-hq, with
// the have query, about every row JetStream acked more than
// ConfirmAfter ago: rows HQ holds are confirmed (delivered, prunable);
// rows it lacks go back to the outbox and are published again, same
// Nats-Msg-Id, same body, in the replay's batches, through the sync
// budget. Nothing is resent unless HQ explicitly says it lacks it: HQ
// down for days costs one unanswered question per round, no resends.

// confirmBatches bounds one round of questions (each of BatchSize rows),
// so that a backlog of unconfirmed rows (an upgrade, an HQ outage) is
// worked through a slice at a time beside the replay.
const confirmBatches = 20

// maxLackShift caps the backoff of a row HQ keeps lacking although
// JetStream took it fresh: ConfirmAfter × 2^4 (8 minutes at 30 s).
const maxLackShift = 4

// confirmEvery is the pause between two rounds while HQ answers: a row
// is asked about at most a third of ConfirmAfter after it is due.
func (r *Replayer) confirmEvery() time.Duration {
	return max(r.cfg.ConfirmAfter/3, 50*time.Millisecond)
}

// confirmLoop asks HQ about acked rows until ctx ends. While HQ does not
// answer, the pause between rounds doubles up to ConfirmAfter.
func (r *Replayer) confirmLoop(ctx context.Context) {
	every := r.confirmEvery()
	wait := every
	lastAudit := time.Now()
	for sleep(ctx, jitter(wait), nil) {
		err := r.confirmRound(ctx)
		if err == nil && (r.auditNow.Load() || time.Since(lastAudit) >= r.cfg.AuditEvery) {
			r.auditNow.Store(false)
			if err = r.audit(ctx); err == nil {
				lastAudit = time.Now()
			} else {
				r.auditNow.Store(true) // again once HQ answers
			}
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			lvl := slog.LevelInfo
			if errors.Is(err, ErrNotConnected) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) {
				lvl = slog.LevelDebug // HQ is down: the status says so; nothing is resent meanwhile
			}
			r.log.Log(ctx, lvl, "HQ did not confirm what it stores; asking again later", "err", err)
			wait = min(2*wait, max(r.cfg.ConfirmAfter, every))
		default:
			wait = every
		}
	}
}

// jitter spreads d by ±25 %, so stores do not ask in step.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + rand.N(d/2+1)
}

// confirmRound asks HQ about the rows due, a batch at a time, and
// records its answers. It returns an error when HQ did not answer.
func (r *Replayer) confirmRound(ctx context.Context) error {
	l := r.nc.Load()
	if l == nil || !l.nc.IsConnected() {
		return ErrNotConnected
	}
	changed := false
	defer func() {
		if changed {
			r.refreshStats(ctx)
		}
	}()
	for range confirmBatches {
		now := time.Now()
		rows, err := r.j.DueUnconfirmed(ctx, now.Add(-r.cfg.ConfirmAfter), now, r.cfg.BatchSize)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		flows := make([]string, len(rows))
		for i, u := range rows {
			flows[i] = u.FlowNo
		}
		have, err := r.have(ctx, l, flows)
		if err != nil {
			return err
		}
		held := make(map[string]bool, len(have))
		for _, f := range have {
			held[f] = true
		}
		// A duplicate ack HQ lacks: its ID is claimed in the stream, so a
		// resend there may be dropped again (direct.go).
		direct := r.deliverDirect(ctx, l, rows, held)
		var confirmed []string
		lacking := map[time.Duration][]string{} // wait before the next question → rows
		for _, u := range rows {
			if held[u.FlowNo] || direct[u.FlowNo] {
				confirmed = append(confirmed, u.FlowNo)
				continue
			}
			w := r.lackWait(u)
			lacking[w] = append(lacking[w], u.FlowNo)
		}
		wctx := context.WithoutCancel(ctx) // HQ's answer is a fact: record it
		n, err := r.j.MarkConfirmed(wctx, confirmed...)
		if err != nil {
			return err
		}
		resent := 0
		for w, fl := range lacking {
			k, err := r.j.MarkLacking(wctx, now.Add(w), fl...)
			if err != nil {
				return err
			}
			resent += k
		}
		r.m.hqConfirmed.Add(float64(n))
		r.m.resent.Add(float64(resent))
		r.mu.Lock()
		r.st.HQConfirmed += uint64(n)
		r.st.Resent += uint64(resent)
		r.mu.Unlock()
		changed = changed || n > 0 || resent > 0
		if resent > 0 {
			r.log.Warn("HQ lacks transactions JetStream had acknowledged: publishing them again from the journal",
				"rows", resent, "first", firstOf(lacking))
			r.signal()
		}
		if len(rows) < r.cfg.BatchSize {
			return nil
		}
	}
	return nil
}

// lackWait is how long after HQ said it lacks u the row is asked about
// again (its resend's ack must also be ConfirmAfter old). A row lost
// once, or dropped by JetStream as a duplicate (the Nats-Msg-Id is still
// in the stream's duplicate window, whatever became of its message:
// resends get through once the window has passed), is asked about again
// after ConfirmAfter. A row HQ still lacks after JetStream took it fresh
// more than once waits twice as long each time, up to 2^maxLackShift ×
// ConfirmAfter: HQ answers but does not store what reaches it, and the
// store must not flood it.
func (r *Replayer) lackWait(u journal.Unconfirmed) time.Duration {
	lacks := u.Lacks
	if !u.DupAck {
		lacks++
	}
	shift := min(max(lacks-1, 0), maxLackShift)
	return r.cfg.ConfirmAfter << shift
}

func firstOf(m map[time.Duration][]string) string {
	for _, fl := range m {
		if len(fl) > 0 {
			return fl[0]
		}
	}
	return ""
}

// audit asks HQ again about the rows of the last AuditDays business days
// it had confirmed, and puts those it no longer holds back in the
// outbox (its database restored from an older backup, rows deleted):
// the day's completeness at HQ (manifest against stored rows) then
// repairs itself while the journal still holds the rows. It returns an
// error when HQ did not answer; the rows are asked about again later.
func (r *Replayer) audit(ctx context.Context) error {
	l := r.nc.Load()
	if l == nil || !l.nc.IsConnected() {
		return ErrNotConnected
	}
	from := businessday.Of(time.Now().AddDate(0, 0, -r.cfg.AuditDays), r.cfg.Location)
	var after int64
	lost := 0
	for {
		flows, last, err := r.j.ConfirmedSince(ctx, from, after, r.cfg.BatchSize)
		if err != nil {
			return err
		}
		if len(flows) == 0 {
			break
		}
		have, err := r.have(ctx, l, flows)
		if err != nil {
			return err
		}
		held := make(map[string]bool, len(have))
		for _, f := range have {
			held[f] = true
		}
		var gone []string
		for _, f := range flows {
			if !held[f] {
				gone = append(gone, f)
			}
		}
		n, err := r.j.MarkLost(context.WithoutCancel(ctx), gone...)
		if err != nil {
			return err
		}
		lost += n
		after = last
		if len(flows) < r.cfg.BatchSize {
			break
		}
	}
	if lost > 0 {
		r.m.resent.Add(float64(lost))
		r.mu.Lock()
		r.st.Resent += uint64(lost)
		r.mu.Unlock()
		r.log.Warn("HQ no longer holds transactions it had confirmed: publishing them again from the journal",
			"rows", lost, "since_day", from)
		r.refreshStats(ctx)
		r.signal()
	}
	return nil
}
