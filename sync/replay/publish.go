package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/wire"
)

// batch sends one batch of the outbox and records the outcome of each
// row in the journal. It returns how many rows it handled (0: the outbox
// is empty) and an error when some rows are left to retry.
//
// The journal write that marks a batch's rows acked runs while the next
// batch is read and published (the outbox is read past the rows being
// marked), and the write that marks a batch sent runs while it is
// published: each batch then costs about its publish alone. A crash
// before a batch's sent mark is durable leaves its rows pending: they
// are resent without asking HQ first, at most that one batch, and
// stored once all the same.
func (r *Replayer) batch(ctx context.Context, l *link) (int, error) {
	// Take the sync budget before reading the batch, not after: while
	// the budget is short, rows pile up meanwhile and the batch that
	// gets the hit is as full as it can be, instead of every trickle of
	// sales spending a hit of its own.
	peek, err := r.j.OutboxAfter(ctx, r.floor, 1, r.cfg.BatchBytes)
	if err != nil {
		return 0, fmt.Errorf("read outbox: %w", err)
	}
	if len(peek) == 0 && r.floor > 0 {
		// Everything after the last batch is sent: finish recording it
		// and look from the start again (rows whose ack could not be
		// recorded, rows back from quarantine).
		if err := r.settle(); err != nil {
			return 0, err
		}
		r.floor = 0
		if peek, err = r.j.OutboxAfter(ctx, 0, 1, r.cfg.BatchBytes); err != nil {
			return 0, fmt.Errorf("read outbox: %w", err)
		}
	}
	if len(peek) == 0 {
		return 0, nil
	}
	if r.lim != nil {
		if err := r.lim.WaitStoreSync(ctx); err != nil {
			return 0, fmt.Errorf("wait for the store sync budget: %w", err)
		}
	}
	rows, err := r.j.OutboxAfter(ctx, r.floor, r.cfg.BatchSize, r.cfg.BatchBytes)
	if err != nil {
		return 0, fmt.Errorf("read outbox: %w", err)
	}
	if len(rows) == 0 {
		return 0, nil
	}
	handled, last := len(rows), rows[len(rows)-1].RowID

	// Rows HQ could never store are set aside before anything is sent.
	rows = slices.DeleteFunc(rows, func(o journal.Outgoing) bool {
		if err := r.check(o); err != nil {
			r.quarantine(ctx, o.FlowNo, err.Error())
			return true
		}
		return false
	})

	// Rows sent before (a timeout, a dropped connection, a restart) may
	// already be at HQ: ask, and resend only what it does not confirm.
	rows, err = r.skipConfirmed(ctx, l, rows)
	if err != nil || len(rows) == 0 {
		return handled, err
	}

	start := time.Now()
	flows := make([]string, len(rows))
	for i, o := range rows {
		flows[i] = o.FlowNo
	}
	sent := make(chan error, 1)
	go func() { sent <- r.j.MarkSent(ctx, flows...) }()
	results := r.publish(ctx, l, rows)
	sentErr := <-sent

	var acked []string
	failed := map[string][]string{} // reason → rows
	var firstErr error
	for i, o := range rows {
		err := results[i]
		if err == nil {
			acked = append(acked, o.FlowNo)
			continue
		}
		if reason, ok := permanent(err); ok {
			r.quarantine(ctx, o.FlowNo, reason)
			continue
		}
		if ctx.Err() != nil {
			continue // shutting down: the row stays sent, HQ is asked about it at the next start
		}
		r.m.errors.WithLabelValues(errKind(err)).Inc()
		failed[err.Error()] = append(failed[err.Error()], o.FlowNo)
		if firstErr == nil {
			firstErr = fmt.Errorf("publish %s (%d of %d rows without ack, resent later): %w",
				wire.MsgID(r.cfg.StoreID, o.FlowNo), countErrs(results), len(rows), err)
		}
	}
	r.m.batch.Observe(time.Since(start).Seconds())

	// One batch's marks at a time, in order: the previous batch's
	// acks are recorded before this one's.
	prevErr := r.settle()
	if sentErr != nil {
		// Not marked sent: the rows stay pending and are resent whatever
		// HQ got (it stores each once); their acks are not recorded
		// either, so that no row is acked without its sent mark.
		r.floor = 0
		return handled, errors.Join(fmt.Errorf("mark batch sent: %w", sentErr), prevErr)
	}
	if firstErr != nil || prevErr != nil || ctx.Err() != nil {
		// Recorded now, and the rows left are read again from the start.
		r.floor = 0
		return handled, errors.Join(firstErr, prevErr, r.record(ctx, acked, failed))
	}
	rec := &recording{done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		rec.err = r.record(ctx, acked, nil)
	}()
	r.recording, r.floor = rec, last
	return handled, nil
}

// recording is the journal write of a batch's acks, running while the
// next batch is sent.
type recording struct {
	done chan struct{}
	err  error
}

// settle waits until the last batch's acks are recorded. On an error its
// rows stay in the outbox and the outbox is read from its start again.
func (r *Replayer) settle() error {
	rec := r.recording
	if rec == nil {
		return nil
	}
	<-rec.done
	r.recording = nil
	if rec.err != nil {
		r.floor = 0
	}
	return rec.err
}

// record marks rows acked and keeps the publish errors of the others.
// Acks are recorded even when ctx ended meanwhile: they are facts.
func (r *Replayer) record(ctx context.Context, acked []string, failed map[string][]string) error {
	wctx := context.WithoutCancel(ctx)
	if err := r.j.MarkAcked(wctx, acked...); err != nil {
		return fmt.Errorf("mark %d rows acked (they are resent): %w", len(acked), err)
	}
	r.m.acked.Add(float64(len(acked)))
	r.synced(len(acked))
	for reason, fl := range failed {
		if err := r.j.MarkFailed(wctx, reason, fl...); err != nil {
			r.log.Warn("record publish failure", "err", err, "rows", len(fl))
		}
	}
	return nil
}

// check refuses a body HQ would never store: it must be a transaction of
// this store carrying the row's own flow number.
func (r *Replayer) check(o journal.Outgoing) error {
	t, err := wire.ParseTxn(o.Body)
	if err != nil {
		return err
	}
	if t.StoreID != r.cfg.StoreID {
		return fmt.Errorf("%w: store_id %q in the body, this store is %q", wire.ErrInvalid, t.StoreID, r.cfg.StoreID)
	}
	if t.FlowNo != o.FlowNo {
		return fmt.Errorf("%w: flow_no %q in the body of row %s", wire.ErrInvalid, t.FlowNo, o.FlowNo)
	}
	return nil
}

func (r *Replayer) quarantine(ctx context.Context, flowNo, reason string) {
	r.m.quarantined.Inc()
	r.log.Error("HQ can never take this transaction: quarantined (see posedge sync quarantine list)",
		"flow_no", flowNo, "reason", reason)
	if err := r.j.Quarantine(context.WithoutCancel(ctx), flowNo, reason); err != nil {
		r.log.Error("quarantine", "flow_no", flowNo, "err", err)
	}
}

// publish sends rows asynchronously and waits for every ack, at most
// AckTimeout. results[i] is nil when row i's own ack arrived.
func (r *Replayer) publish(ctx context.Context, l *link, rows []journal.Outgoing) []error {
	results := make([]error, len(rows))
	futs := make([]jetstream.PubAckFuture, len(rows))
	for i, o := range rows {
		m := nats.NewMsg(r.subject)
		m.Data = o.Body
		m.Header.Set(wire.HeaderMsgID, wire.MsgID(r.cfg.StoreID, o.FlowNo))
		m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
		f, err := l.js.PublishMsgAsync(m)
		if err != nil {
			results[i] = err
			continue
		}
		r.m.published.Inc()
		futs[i] = f
	}
	r.mu.Lock()
	r.st.Sent += uint64(len(rows) - countErrs(results))
	r.mu.Unlock()

	// The client fails each publish after AckTimeout; the timer is a
	// backstop a little later.
	t := time.NewTimer(r.cfg.AckTimeout + time.Second)
	defer t.Stop()
	expired := false
	for i, f := range futs {
		if f == nil {
			continue
		}
		if expired {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				results[i] = err
			default:
				results[i] = jetstream.ErrAsyncPublishTimeout
			}
			continue
		}
		select {
		case <-f.Ok():
		case err := <-f.Err():
			results[i] = err
		case <-t.C:
			expired = true
			results[i] = jetstream.ErrAsyncPublishTimeout
		case <-ctx.Done():
			expired = true
			results[i] = ctx.Err()
		}
	}
	return results
}

func countErrs(errs []error) int {
	n := 0
	for _, e := range errs {
		if e != nil {
			n++
		}
	}
	return n
}

// permanent tells a refusal that no resend can cure, with its reason.
func permanent(err error) (string, bool) {
	if errors.Is(err, nats.ErrMaxPayload) {
		return "too large: the message exceeds the NATS server's max_payload", true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case jetstream.JSErrCodeStreamMessageExceedsMaximum:
			return "too large: " + api.Description, true
		case jsErrCodeStreamHeaderExceedsMaximum:
			return "header too large: " + api.Description, true
		}
	}
	return "", false
}

// jsErrCodeStreamHeaderExceedsMaximum is nats-server's
// JSStreamHeaderExceedsMaximumErr, which nats.go does not name.
const jsErrCodeStreamHeaderExceedsMaximum jetstream.ErrorCode = 10097

func errKind(err error) string {
	var api *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrAsyncPublishTimeout), errors.Is(err, context.DeadlineExceeded):
		return errTimeout
	case errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrReconnectBufExceeded),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionReconnecting):
		return errDisconnected
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return errNoStream
	case errors.As(err, &api):
		return errRefused
	}
	return errOther
}

// skipConfirmed asks HQ which of the rows already sent it holds, marks
// those acked and returns the rest. When HQ does not answer, every row
// is resent: HQ stores each (store_id, flow_no) once whatever the resends.
func (r *Replayer) skipConfirmed(ctx context.Context, l *link, rows []journal.Outgoing) ([]journal.Outgoing, error) {
	var ask []string
	for _, o := range rows {
		if o.Attempts > 0 {
			ask = append(ask, o.FlowNo)
		}
	}
	if len(ask) == 0 {
		return rows, nil
	}
	have, err := r.have(ctx, l, ask)
	if err != nil {
		lvl := slog.LevelInfo
		if errors.Is(err, nats.ErrNoResponders) {
			lvl = slog.LevelDebug // posedge-hq does not serve the query (yet)
		}
		r.log.Log(ctx, lvl, "HQ did not say what it holds; resending", "rows", len(ask), "err", err)
		return rows, nil
	}
	if len(have) == 0 {
		return rows, nil
	}
	held := map[string]bool{}
	for _, f := range have {
		held[f] = true
	}
	var confirmed []string
	rows = slices.DeleteFunc(rows, func(o journal.Outgoing) bool {
		if held[o.FlowNo] && o.Attempts > 0 {
			confirmed = append(confirmed, o.FlowNo)
			return true
		}
		return false
	})
	if err := r.j.MarkAcked(context.WithoutCancel(ctx), confirmed...); err != nil {
		return rows, fmt.Errorf("mark %d rows HQ holds acked: %w", len(confirmed), err)
	}
	r.m.acked.Add(float64(len(confirmed)))
	r.m.confirmed.Add(float64(len(confirmed)))
	r.mu.Lock()
	r.st.Confirmed += uint64(len(confirmed))
	r.mu.Unlock()
	r.synced(len(confirmed))
	r.log.Info("HQ already holds rows sent before; not resending them", "rows", len(confirmed))
	return rows, nil
}

// have is the "what do you hold" request to posedge-hq, on a subject
// outside the stream, bounded by HaveTimeout.
func (r *Replayer) have(ctx context.Context, l *link, flows []string) ([]string, error) {
	req, err := json.Marshal(wire.HaveRequest{StoreID: r.cfg.StoreID, FlowNos: flows})
	if err != nil {
		return nil, fmt.Errorf("encode have request: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.HaveTimeout)
	defer cancel()
	msg, err := l.nc.RequestWithContext(rctx, wire.HaveSubject(r.cfg.StoreID), req)
	if err != nil {
		return nil, fmt.Errorf("ask HQ what it holds: %w", err)
	}
	var rep wire.HaveReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return nil, fmt.Errorf("decode HQ's have reply: %w", err)
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("HQ's have reply: %s", rep.Error)
	}
	sort.Strings(rep.Have)
	return slices.Compact(rep.Have), nil
}

// hint adds advice to an error an operator reads in the status.
func hint(err error) string {
	switch errKind(err) {
	case errNoStream:
		return strings.TrimSpace(err.Error() + " (no stream captures the subject: is posedge-hq running and has it created the stream?)")
	}
	return err.Error()
}
