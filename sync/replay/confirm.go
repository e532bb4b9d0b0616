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
// The question carries each row's stream sequence (its PubAck's), and
// HQ answers "pending" for a row it lacks whose message is still in the
// stream, unread by its consumer: after a long outage HQ works through
// the stream's backlog while the stores wait, instead of every store
// resending its backlog (a resend storm).

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
	// The first whole-journal pass comes within AuditAllEvery of the
	// start, at a random time: stores restarted together (an upgrade)
	// do not all read their months at once.
	lastAll := time.Now().Add(-rand.N(r.cfg.AuditAllEvery))
	var pass *auditPass // the audit under way, nil when none
	for sleep(ctx, jitter(wait), nil) {
		err := r.confirmRound(ctx)
		if err == nil && pass == nil {
			switch {
			case time.Since(lastAll) >= r.cfg.AuditAllEvery:
				pass = &auditPass{} // every day the journal holds
			case r.auditNow.Load() || time.Since(lastAudit) >= r.cfg.AuditEvery:
				pass = &auditPass{from: businessday.Of(time.Now().AddDate(0, 0, -r.cfg.AuditDays), r.cfg.Location)}
			}
			if pass != nil {
				r.auditNow.Store(false)
			}
		}
		if err == nil && pass != nil {
			// A slice per round; on an error the pass goes on from where
			// it stood once HQ answers again.
			var done bool
			if done, err = r.audit(ctx, pass); err == nil && done {
				if pass.from == "" {
					lastAll = time.Now()
				}
				pass, lastAudit = nil, time.Now()
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
		flows, seqs := make([]string, len(rows)), make([]uint64, len(rows))
		known := false
		for i, u := range rows {
			flows[i], seqs[i] = u.FlowNo, u.StreamSeq
			known = known || u.StreamSeq > 0
		}
		if !known {
			seqs = nil // rows acked before the journal kept sequences
		}
		have, pending, err := r.ask(ctx, l, flows, seqs)
		if err != nil {
			return err
		}
		held := make(map[string]bool, len(have))
		for _, f := range have {
			held[f] = true
		}
		onItsWay := make(map[string]bool, len(pending))
		skip := make(map[string]bool, len(have)+len(pending)) // held, or still unread in the stream
		for _, f := range have {
			skip[f] = true
		}
		for _, f := range pending {
			onItsWay[f], skip[f] = true, true
		}
		// A duplicate ack HQ lacks (and whose message is not unread in the
		// stream): its ID is claimed in the stream, so a resend there may
		// be dropped again (direct.go).
		direct := r.deliverDirect(ctx, l, rows, skip)
		var confirmed, unread []string
		lacking := map[time.Duration][]string{} // wait before the next question → rows
		for _, u := range rows {
			if held[u.FlowNo] || direct[u.FlowNo] {
				confirmed = append(confirmed, u.FlowNo)
				continue
			}
			if onItsWay[u.FlowNo] {
				// Still in the stream, unread by HQ's consumer (a backlog
				// after an outage): resending it would only duplicate it.
				unread = append(unread, u.FlowNo)
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
		if _, err := r.j.MarkPending(wctx, now.Add(r.cfg.ConfirmAfter), unread...); err != nil {
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

// auditPass is where an audit of the journal's confirmed rows stands.
type auditPass struct {
	from  string // the first business day asked about; "" every day the journal holds
	after int64  // the last row id asked about
	lost  int    // rows found gone so far
}

// audit asks HQ again about the rows it had confirmed, of the business
// days from pass.from on (all the journal still holds when "":
// journal.retention, HQ may lose a day of any age the store can still
// repair), and puts those it no longer
// holds back in the outbox (its database restored from an older backup,
// rows deleted): the day's completeness at HQ (manifest against stored
// rows) then repairs itself. One call asks at most confirmBatches
// questions, from where pass stands, so that a journal of months is
// worked through a slice per round beside the confirmations; done is
// true once the pass reached the journal's end. It returns an error
// when HQ did not answer; the pass goes on from there later.
func (r *Replayer) audit(ctx context.Context, pass *auditPass) (done bool, err error) {
	l := r.nc.Load()
	if l == nil || !l.nc.IsConnected() {
		return false, ErrNotConnected
	}
	defer func() {
		if done && pass.lost > 0 {
			r.log.Warn("HQ no longer held transactions it had confirmed: published them again from the journal",
				"rows", pass.lost, "since_day", pass.from)
		}
	}()
	for range confirmBatches {
		flows, last, err := r.j.ConfirmedSince(ctx, pass.from, pass.after, r.cfg.BatchSize)
		if err != nil {
			return false, err
		}
		if len(flows) == 0 {
			return true, nil
		}
		have, err := r.have(ctx, l, flows)
		if err != nil {
			return false, err
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
			return false, err
		}
		pass.after = last
		if n > 0 {
			pass.lost += n
			r.m.resent.Add(float64(n))
			r.mu.Lock()
			r.st.Resent += uint64(n)
			r.mu.Unlock()
			r.refreshStats(ctx)
			r.signal() // resent now, not at the pass's end
		}
		if len(flows) < r.cfg.BatchSize {
			return true, nil
		}
	}
	return false, nil
}
