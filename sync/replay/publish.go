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
// Batches overlap as a pipeline, each step beside the next: while a full
// batch's acks are awaited, the batch after it is read and published; a
// batch's sent mark (one small write, MarkSentThrough) is written while
// it is published, its acks while the next one's are awaited. A batch
// goes out only once the sent mark of the one before is durable, so a
// crash leaves at most one batch whose rows are resent without asking HQ
// first; HQ stores them once all the same. A batch that is not full has
// landed (its acks are in) when batch returns.
func (r *Replayer) batch(ctx context.Context, l *link) (int, error) {
	rows, err := r.take(ctx)
	if err != nil || len(rows) == 0 {
		return 0, errors.Join(err, r.land(ctx))
	}
	handled, last := len(rows), rows[len(rows)-1].RowID

	// Rows sent before (a timeout, a dropped connection, a restart) may
	// already be at HQ: ask, and resend only what it does not confirm.
	rows, err = r.skipConfirmed(ctx, l, rows)
	if err != nil || len(rows) == 0 {
		return handled, errors.Join(err, r.land(ctx))
	}

	switch {
	case r.inflight != nil:
		<-r.inflight.rec.marked
	case r.recording != nil:
		<-r.recording.marked
	}
	f := r.send(ctx, l, rows)
	r.floor = last
	full := handled == r.cfg.BatchSize
	if full {
		r.readAhead(ctx, last)
	}
	// The batch before lands while this one is on its way.
	err = r.land(ctx)
	r.inflight = f
	if full && err == nil {
		return handled, nil
	}
	return handled, errors.Join(err, r.land(ctx))
}

// flight is a batch handed to the NATS client, its acks awaited.
type flight struct {
	rows    []journal.Outgoing
	results []error  // per row: nil once acked
	dups    []bool   // per row: its ack said duplicate (not proof HQ has it)
	seqs    []uint64 // per row: the stream sequence its ack named
	futs    []jetstream.PubAckFuture
	start   time.Time
	rec     *recording
}

// send starts the batch's recording (its sent mark) and hands its rows to
// the NATS client without waiting for acks. A row HQ could never store
// (check) is not sent: its result wraps wire.ErrInvalid. Checking each
// row just before its publish lets the check's decoding overlap with the
// server's work on the rows before.
func (r *Replayer) send(ctx context.Context, l *link, rows []journal.Outgoing) *flight {
	f := &flight{rows: rows, results: make([]error, len(rows)), dups: make([]bool, len(rows)), seqs: make([]uint64, len(rows)), futs: make([]jetstream.PubAckFuture, len(rows)),
		start: time.Now(), rec: r.startRecording(ctx, rows[len(rows)-1])}
	for i, o := range rows {
		err, ok := r.checked[o.RowID]
		if !ok {
			err = r.check(o)
		}
		if err != nil {
			f.results[i] = err
			continue
		}
		m := nats.NewMsg(r.subject)
		m.Data = o.Body
		m.Header.Set(wire.HeaderMsgID, wire.MsgID(r.cfg.StoreID, o.FlowNo))
		m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
		fut, err := l.js.PublishMsgAsync(m)
		if err != nil {
			f.results[i] = err
			continue
		}
		r.m.published.Inc()
		f.futs[i] = fut
	}
	r.mu.Lock()
	r.st.Sent += uint64(len(rows) - countErrs(f.results))
	r.mu.Unlock()
	if r.cfg.Health != nil && countErrs(f.results) < len(rows) {
		r.cfg.Health.HQPublished(f.start)
	}
	return f
}

// land waits for the acks of the batch in flight, if any, and records
// its outcome: acked rows, quarantined ones, and those left to resend,
// after which the outbox is read from its start again.
func (r *Replayer) land(ctx context.Context) error {
	f := r.inflight
	if f == nil {
		return nil
	}
	r.inflight = nil
	r.wait(ctx, f)
	var acked, dups []journal.Ack
	failed := map[string][]string{} // reason → rows
	var firstErr error
	full := 0
	var overflow []journal.Outgoing // refused because the whole stream is full
	for i, o := range f.rows {
		err := f.results[i]
		if err == nil && f.dups[i] {
			dups = append(dups, journal.Ack{RowID: o.RowID, StreamSeq: f.seqs[i]})
			continue
		}
		if err == nil {
			acked = append(acked, journal.Ack{RowID: o.RowID, StreamSeq: f.seqs[i]})
			continue
		}
		if reason, ok := permanent(err); ok {
			r.quarantine(ctx, o.FlowNo, reason)
			continue
		}
		if ctx.Err() != nil {
			continue // shutting down: the row stays in the outbox, covered by the sent mark: HQ is asked about it at the next start
		}
		kind := errKind(err)
		r.m.errors.WithLabelValues(kind).Inc()
		if kind == errStreamFull {
			full++
		}
		if wholeStreamFull(err) {
			overflow = append(overflow, o)
			continue
		}
		failed[err.Error()] = append(failed[err.Error()], o.FlowNo)
		if firstErr == nil {
			firstErr = fmt.Errorf("publish %s (%d of %d rows without ack, resent later): %w",
				wire.MsgID(r.cfg.StoreID, o.FlowNo), countErrs(f.results), len(f.rows), err)
		}
	}
	if len(overflow) > 0 {
		// The whole stream is full — another store's leaked credential
		// flooding it can do that (docs/security.md) — so the rows go to
		// posedge-hq directly, outside the stream, as a claimed ID's do
		// (direct.go). Taken, they count as acknowledged (no stream
		// sequence) and are confirmed by the have query like any other.
		took, err := r.overflowDirect(ctx, overflow)
		acked = append(acked, took...)
		if err != nil {
			for _, o := range overflow[len(took):] {
				failed[err.Error()] = append(failed[err.Error()], o.FlowNo)
			}
			if firstErr == nil {
				firstErr = fmt.Errorf("publish %s (the stream is full; HQ did not take %d rows directly, resent later): %w",
					wire.MsgID(r.cfg.StoreID, overflow[len(took)].FlowNo), len(overflow)-len(took), err)
			}
		}
	}
	r.m.batch.Observe(time.Since(f.start).Seconds())
	if full > 0 {
		r.log.Warn("HQ's stream refused rows: a limit of the stream is reached (this store's cap or the whole stream's); they stay in the journal, unacknowledged, and are sent again with backoff",
			"rows", full, "of", len(f.rows), "err", firstErr)
	}

	// One batch's outcome at a time, in order.
	prevErr := r.settle()
	f.rec.outcome <- outcome{acked, dups, failed}
	if firstErr != nil || prevErr != nil || ctx.Err() != nil {
		r.dropAhead()
		r.floor = 0
		<-f.rec.done
		return errors.Join(firstErr, prevErr, f.rec.err)
	}
	r.recording = f.rec
	r.landed = true
	return nil
}

// wait waits for every ack of a batch, at most AckTimeout: f.results[i]
// is nil when row i's own ack arrived.
func (r *Replayer) wait(ctx context.Context, f *flight) {
	// The client fails each publish after AckTimeout; the timer is a
	// backstop a little later.
	t := time.NewTimer(r.cfg.AckTimeout + time.Second)
	defer t.Stop()
	expired := false
	for i, fut := range f.futs {
		if fut == nil {
			continue
		}
		if expired {
			select {
			case ack := <-fut.Ok():
				f.dups[i], f.seqs[i] = ackOf(ack)
			case err := <-fut.Err():
				f.results[i] = err
			default:
				f.results[i] = jetstream.ErrAsyncPublishTimeout
			}
			continue
		}
		select {
		case ack := <-fut.Ok():
			f.dups[i], f.seqs[i] = ackOf(ack)
		case err := <-fut.Err():
			f.results[i] = err
		case <-t.C:
			expired = true
			f.results[i] = jetstream.ErrAsyncPublishTimeout
		case <-ctx.Done():
			expired = true
			f.results[i] = ctx.Err()
		}
	}
}

// ackOf is whether a PubAck said duplicate and the stream sequence it
// named (for a duplicate, the sequence of the message JetStream kept).
func ackOf(ack *jetstream.PubAck) (dup bool, seq uint64) {
	if ack == nil {
		return false, 0
	}
	return ack.Duplicate, ack.Sequence
}

// take charges the sync budget and reads the next batch: the rows read
// ahead while the last batch's acks were awaited, or else from the
// outbox, past the rows whose acks are being recorded.
func (r *Replayer) take(ctx context.Context) ([]journal.Outgoing, error) {
	r.checked = nil
	if ahead, checked := r.dropAhead(); len(ahead) > 0 {
		if err := r.chargeLanding(ctx); err != nil {
			return nil, err
		}
		r.checked = checked
		return ahead, nil
	}
	// Take the sync budget before reading the batch, not after: while
	// the budget is short, rows pile up meanwhile and the batch that
	// gets the hit is as full as it can be, instead of every trickle of
	// sales spending a hit of its own.
	peek, err := r.j.OutboxAfter(ctx, r.floor, 1, r.cfg.BatchBytes)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	if len(peek) == 0 && r.floor > 0 {
		// Everything after the last batch is sent: land it, finish
		// recording it and look from the start again (rows whose ack
		// could not be recorded, rows back from quarantine).
		if err := errors.Join(r.land(ctx), r.settle()); err != nil {
			return nil, err
		}
		r.floor = 0
		if peek, err = r.j.OutboxAfter(ctx, 0, 1, r.cfg.BatchBytes); err != nil {
			return nil, fmt.Errorf("read outbox: %w", err)
		}
	}
	if len(peek) == 0 {
		return nil, nil
	}
	if err := r.charge(ctx); err != nil {
		return nil, err
	}
	rows, err := r.j.OutboxAfter(ctx, r.floor, r.cfg.BatchSize, r.cfg.BatchBytes)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return rows, nil
}

// charge takes one hit of the store-wide sync budget, waiting for it.
func (r *Replayer) charge(ctx context.Context) error {
	if r.lim == nil {
		return nil
	}
	if err := r.lim.WaitStoreSync(ctx); err != nil {
		return fmt.Errorf("wait for the store sync budget: %w", err)
	}
	return nil
}

// chargeLanding is charge while a batch is in flight: when the budget
// makes the next batch wait, the one in flight lands meanwhile, so that
// its acks are recorded (and the backlog figures right) without waiting
// for the budget in turn.
func (r *Replayer) chargeLanding(ctx context.Context) error {
	if r.lim == nil || r.inflight == nil {
		return r.charge(ctx)
	}
	got := make(chan error, 1)
	go func() { got <- r.charge(ctx) }()
	t := time.NewTimer(landAfter)
	defer t.Stop()
	select {
	case err := <-got:
		return err
	case <-t.C:
	}
	return errors.Join(r.land(ctx), <-got)
}

// landAfter is how long the next batch waits for the sync budget before
// the batch in flight lands meanwhile.
const landAfter = 50 * time.Millisecond

// aheadBatch is a batch read ahead, with the check of each of its rows
// by rowid.
type aheadBatch struct {
	rows    []journal.Outgoing
	checked map[int64]error
}

// readAhead starts reading the batch after row last while this one is
// on its way. Only a full batch reads ahead: behind it is a backlog,
// whose next batch is full whenever it is read. Its rows are checked
// there too (a JSON decode each), so that the publish of a drain's
// batches does not wait for their checks.
func (r *Replayer) readAhead(ctx context.Context, last int64) {
	ch := make(chan aheadBatch, 1)
	r.ahead = ch
	go func() {
		rows, err := r.j.OutboxAfter(ctx, last, r.cfg.BatchSize, r.cfg.BatchBytes)
		if err != nil {
			ch <- aheadBatch{} // read again by take
			return
		}
		checked := make(map[int64]error, len(rows))
		for _, o := range rows {
			checked[o.RowID] = r.check(o)
		}
		ch <- aheadBatch{rows, checked}
	}()
}

// dropAhead returns the rows read ahead, if any, with their checks, and
// forgets them.
func (r *Replayer) dropAhead() ([]journal.Outgoing, map[int64]error) {
	if r.ahead == nil {
		return nil, nil
	}
	b := <-r.ahead
	r.ahead = nil
	return b.rows, b.checked
}

// recording is the journal's writes about one batch: its sent mark,
// written while it is published, then the outcome of its publish,
// written while the next batch is sent.
type recording struct {
	marked  chan struct{} // closed once the sent mark is written (or failed)
	outcome chan outcome  // the publish's outcome, given once
	done    chan struct{} // closed once all is written; then err is set
	err     error
}

// outcome is what became of a batch's rows: acked, or failed for a
// reason (resent later).
type outcome struct {
	acked  []journal.Ack       // rows and the stream sequences their acks named
	dups   []journal.Ack       // rows acked as duplicates
	failed map[string][]string // reason → flow numbers
}

// startRecording writes the sent mark of a batch whose last row is last,
// and then its outcome once given. Acks are recorded even when ctx ended
// meanwhile: they are facts.
func (r *Replayer) startRecording(ctx context.Context, last journal.Outgoing) *recording {
	rec := &recording{marked: make(chan struct{}), outcome: make(chan outcome, 1), done: make(chan struct{})}
	go func() {
		defer close(rec.done)
		wctx := context.WithoutCancel(ctx)
		err := r.j.MarkSentThrough(wctx, last.RowID, last.FlowNo)
		if err != nil {
			err = fmt.Errorf("mark batch sent: %w", err)
		}
		close(rec.marked)
		o := <-rec.outcome
		rec.err = errors.Join(err, r.record(wctx, o))
	}()
	return rec
}

// settle waits until the last batch's outcome is recorded. On an error
// its rows stay in the outbox and the outbox is read from its start
// again.
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

// record marks rows acked, and counts a publish attempt and keeps the
// error of the others.
func (r *Replayer) record(ctx context.Context, o outcome) error {
	if err := r.j.MarkAckedSeqs(ctx, false, o.acked); err != nil {
		return fmt.Errorf("mark %d rows acked (they are resent): %w", len(o.acked), err)
	}
	// A duplicate ack is an ack all the same (the outbox moves on), but
	// not proof: the message JetStream kept under the Nats-Msg-Id may be
	// another's, or lost since. HQ's confirmation decides (confirm.go).
	if err := r.j.MarkAckedSeqs(ctx, true, o.dups); err != nil {
		return fmt.Errorf("mark %d rows acked as duplicates (they are resent): %w", len(o.dups), err)
	}
	if n := len(o.acked) + len(o.dups); n > 0 {
		r.m.acked.Add(float64(n))
		r.synced(n)
	}
	for reason, fl := range o.failed {
		err := r.j.MarkSent(ctx, fl...)
		if err == nil {
			err = r.j.MarkFailed(ctx, reason, fl...)
		}
		if err != nil {
			r.log.Warn("record publish failure", "err", err, "rows", len(fl))
		}
	}
	return nil
}

// check refuses a body HQ would never store: it must be a transaction of
// this store carrying the row's own flow number. Its errors wrap
// wire.ErrInvalid: the row is quarantined, not sent.
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
	if errors.Is(err, wire.ErrInvalid) {
		return err.Error(), true
	}
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
	case streamFull(err):
		return errStreamFull
	case errors.As(err, &api):
		return errRefused
	}
	return errOther
}

// streamFull tells a publish refused by a limit of HQ's stream (posedge-hq's
// stream_max_msgs_per_subject or stream_max_bytes, with discard new): the
// row was not stored, it stays in the journal and is sent again.
// nats-server answers JSStreamStoreFailedF (10077) with the store's own
// error as description.
func streamFull(err error) bool { return streamLimit(err) != "" }

// wholeStreamFull tells a publish refused by a limit of the whole stream
// (stream_max_bytes, or a message count), not by this store's own
// per-subject cap: space another store may have taken.
func wholeStreamFull(err error) bool {
	limit := streamLimit(err)
	return limit != "" && limit != perSubjectLimit
}

// perSubjectLimit is how nats-server names a refusal by max_msgs_per_subject.
const perSubjectLimit = "maximum messages per subject exceeded"

// streamLimit is the stream limit that refused a publish, as nats-server
// words it, or "" when err is no such refusal.
func streamLimit(err error) string {
	var api *jetstream.APIError
	if !errors.As(err, &api) || api.ErrorCode != jsErrCodeStreamStoreFailed {
		return ""
	}
	switch api.Description {
	case "maximum messages exceeded", "maximum bytes exceeded", perSubjectLimit:
		return api.Description
	}
	return ""
}

// jsErrCodeStreamStoreFailed is nats-server's JSStreamStoreFailedF, which
// nats.go does not name.
const jsErrCodeStreamStoreFailed jetstream.ErrorCode = 10077

// skipConfirmed asks HQ which of the rows already sent it holds, marks
// those acked and returns the rest. When HQ does not answer, every row
// is resent: HQ stores each (store_id, flow_no) once whatever the resends.
func (r *Replayer) skipConfirmed(ctx context.Context, l *link, rows []journal.Outgoing) ([]journal.Outgoing, error) {
	var ask []string
	for _, o := range rows {
		if o.MaybeSent {
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
		if held[o.FlowNo] && o.MaybeSent {
			confirmed = append(confirmed, o.FlowNo)
			return true
		}
		return false
	})
	n, err := r.j.MarkConfirmed(context.WithoutCancel(ctx), confirmed...)
	if err != nil {
		return rows, fmt.Errorf("mark %d rows HQ holds confirmed: %w", len(confirmed), err)
	}
	r.m.acked.Add(float64(len(confirmed)))
	r.m.confirmed.Add(float64(len(confirmed)))
	r.m.hqConfirmed.Add(float64(n))
	r.mu.Lock()
	r.st.Confirmed += uint64(len(confirmed))
	r.st.HQConfirmed += uint64(n)
	r.mu.Unlock()
	r.synced(len(confirmed))
	r.log.Info("HQ already holds rows sent before; not resending them", "rows", len(confirmed))
	return rows, nil
}

// have is the "what do you hold" request to posedge-hq, on a subject
// outside the stream, bounded by HaveTimeout.
func (r *Replayer) have(ctx context.Context, l *link, flows []string) ([]string, error) {
	have, _, err := r.ask(ctx, l, flows, nil)
	return have, err
}

// ask is the have query with the stream sequences of the rows' acks
// (seqs, paired with flows; nil when none is known): HQ then also lists
// the rows it lacks whose messages its consumer has not read yet
// (pending), which the store must not resend.
func (r *Replayer) ask(ctx context.Context, l *link, flows []string, seqs []uint64) (have, pending []string, err error) {
	req, err := json.Marshal(wire.HaveRequest{StoreID: r.cfg.StoreID, FlowNos: flows, Seqs: seqs})
	if err != nil {
		return nil, nil, fmt.Errorf("encode have request: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.HaveTimeout)
	defer cancel()
	msg, err := l.nc.RequestWithContext(rctx, wire.HaveSubject(r.cfg.StoreID), req)
	if err != nil {
		return nil, nil, fmt.Errorf("ask HQ what it holds: %w", err)
	}
	var rep wire.HaveReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return nil, nil, fmt.Errorf("decode HQ's have reply: %w", err)
	}
	if rep.Error != "" {
		return nil, nil, fmt.Errorf("HQ's have reply: %s", rep.Error)
	}
	now := time.Now()
	r.mu.Lock()
	r.st.HQAnsweredAt = &now
	r.mu.Unlock()
	sort.Strings(rep.Have)
	sort.Strings(rep.Pending)
	return slices.Compact(rep.Have), slices.Compact(rep.Pending), nil
}

// hint adds advice to an error an operator reads in the status.
func hint(err error) string {
	switch errKind(err) {
	case errNoStream:
		return strings.TrimSpace(err.Error() + " (no stream captures the subject: is posedge-hq running and has it created the stream?)")
	case errStreamFull:
		return strings.TrimSpace(err.Error() + " (HQ's stream is full for this store: the rows stay in the journal and are sent again; ask HQ to check posedge-hq is reading and its stream_max_msgs_per_subject / stream_max_bytes)")
	}
	return err.Error()
}
