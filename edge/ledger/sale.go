package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/offline/journal"
)

// Sale records a sale under the terminal's idempotency key. It answers
// only after the sale is in the journal. In degraded mode the sale is
// journaled only, with a flow number of this node's own range.
func (l *Ledger) Sale(ctx context.Context, term, key string, s SaleRequest) (*Result, error) {
	return l.record(ctx, term, key, s, "sale")
}

func (l *Ledger) record(ctx context.Context, term, key string, s SaleRequest, mode string) (*Result, error) {
	if e := validKey(key); e != nil {
		return nil, e
	}
	s, e := s.Checked(l.Bounds())
	if e != nil {
		return nil, e
	}
	if e := l.journalDamaged(); e != nil {
		return nil, e
	}
	fp := Fingerprint(s)
	if !l.claim(term, key) {
		return nil, errInProgress()
	}
	defer l.release(term, key)
	if r, err := l.fromJournal(ctx, term, key, fp); r != nil || err != nil {
		return r, err
	}
	now := l.now().UTC()
	at := now
	if s.OccurredAt != nil {
		if t, err := time.Parse(time.RFC3339Nano, *s.OccurredAt); err == nil {
			at = t
		}
	}
	day, hour := l.dayHour(at)
	b := body{StoreID: l.cfg.StoreID, TerminalID: term, Kind: "sale", TotalCents: s.TotalCents, Tender: s.Tender,
		Lines: s.Lines, ReceiptNo: s.ReceiptNo, CashierID: s.CashierID,
		CreatedAt: now.Format(time.RFC3339Nano), OccurredAt: at.UTC().Format(time.RFC3339Nano)}
	t := journal.Txn{TerminalID: term, IdemKey: key, Fingerprint: fp, Kind: "sale", Tender: s.Tender,
		TotalCents: s.TotalCents, BusinessDay: day, BusinessHour: hour, CreatedAt: now, Lines: jlines(s.Lines)}
	if l.heldDegraded() {
		return l.recordHeld(ctx, t, b)
	}
	a := txnArgs{mode: mode, term: term, key: key, fp: fp, tender: s.Tender, day: day, hour: hour,
		total: s.TotalCents, bodyRest: b.rest(), tokenForm: IsTokenForm(key)}
	for _, ln := range s.Lines {
		a.lines = append(a.lines, scriptLine{barcode: ln.Barcode, qty: ln.Qty})
	}
	return l.apply(ctx, a, t, b)
}

// apply runs the script, then journals; on a Redis outage it falls back
// to degraded mode.
func (l *Ledger) apply(ctx context.Context, a txnArgs, t journal.Txn, b body) (*Result, error) {
	res, err := l.run(ctx, a)
	if err != nil {
		if outage(ctx, err) {
			l.log.Warn("redis refused a money write; journaling in degraded mode", "terminal", t.TerminalID, "err", err)
			l.SetRedisDown(true)
			return l.recordDegraded(ctx, t, b)
		}
		return nil, err
	}
	if r, err := l.outcome(ctx, res, t); r != nil || err != nil {
		return r, err
	}
	flow := res[1].(string)
	if n, _ := res[2].(int64); n > 0 {
		l.metrics.negativeStock.Add(float64(n))
	}
	t.FlowNo, t.Seq, t.Body, t.Mode, t.Applied = flow, seqOfFlow(flow), withFlowRest(flow, a.bodyRest), journal.ModeNormal, true
	if err := l.journalAppend(ctx, t); err != nil {
		if errors.Is(err, journal.ErrDuplicateKey) {
			// The journal holds the key after all, which its filter said
			// it could not (fromJournal): Redis's effects are taken back
			// and the journal's answer given, as the look-up would have.
			// Kept so that a wrong "no" can never count a sale twice.
			l.log.Error("journal already held the key of a sale redis just applied; taking it back in redis", "terminal", t.TerminalID, "flow_no", flow)
			l.undo(ctx, a, flow)
			if r, err := l.byKey(ctx, t.TerminalID, t.IdemKey, t.Fingerprint); r != nil || err != nil {
				return r, err
			}
			return nil, errJournal(err)
		}
		// The till is told 503: the sale must be recorded nowhere unless
		// it retries the key (contract §3, issue 22 finding 5), so Redis's
		// effects are taken back before the answer; the retry runs the
		// script afresh.
		l.log.Error("journal append failed after redis applied the sale; taking it back in redis", "flow_no", flow, "err", err)
		l.undo(ctx, a, flow)
		return nil, errJournal(err)
	}
	// Marking the record COMPLETED is bookkeeping, not durability (the
	// journal already answers retries): it rides in the next run's
	// pipeline (completions.go), off the answer's path.
	l.comps.add(t.TerminalID, t.IdemKey)
	return &Result{Body: t.Body, FlowNo: flow}, nil
}

// undo runs txn_undo.lua for a call of txn.lua the journal then refused.
// Redis answered that call a moment ago; should it fail now, the record
// stays PROCESSING: a retry journals it, and so would start-up recovery
// (the residual case of docs/durability.md, "A 503 is never recorded").
func (l *Ledger) undo(ctx context.Context, a txnArgs, flow string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.RedisTimeout)
	defer cancel()
	res, err := redisdb.RunUndo(ctx, l.rdb, l.k, l.call(a), flow).Slice()
	if err != nil || len(res) == 0 || res[0] != "undone" {
		l.metrics.undone.WithLabelValues("failed").Inc()
		l.log.Error("could not take back in redis a sale the journal refused", "terminal", a.term, "flow_no", flow, "answer", res, "err", err)
		return
	}
	l.metrics.undone.WithLabelValues("undone").Inc()
}

func (l *Ledger) recordDegraded(ctx context.Context, t journal.Txn, b body) (*Result, error) {
	r, _, err := l.journalDegraded(ctx, t, b)
	return r, err
}

// recordHeld journals a degraded transaction under the mode's read lock
// (taken by heldDegraded) and releases it. While the ledger hands over to
// Redis (handOver) the transaction is applied to Redis at once too, before
// the answer: the catch-up then only has the rows waiting when it began,
// however fast the tills sell, and never needs to hold them (issue 21: the
// hand-over applied 15,937 rows under the lock, 2.6 s without a sale).
func (l *Ledger) recordHeld(ctx context.Context, t journal.Txn, b body) (*Result, error) {
	defer l.modeMu.RUnlock()
	r, jt, err := l.journalDegraded(ctx, t, b)
	if err == nil && r != nil && !r.Replayed && l.catchingUp.Load() {
		l.applyOwn(ctx, jt)
	}
	return r, err
}

// applyOwn applies a degraded transaction just journaled and marks it
// applied. Best effort: a row it could not apply stays unapplied and the
// hand-over applies it. An outage stops it for the rest of the hand-over,
// so no further sale waits a Redis timeout for it.
func (l *Ledger) applyOwn(ctx context.Context, t journal.Txn) {
	ctx = context.WithoutCancel(ctx) // the sale is journaled: finish its bookkeeping
	if _, err := l.applyJournaled(ctx, t); err != nil {
		if outage(ctx, err) {
			l.catchingUp.Store(false)
		}
		l.log.Debug("apply a degraded sale while handing over; left for the hand-over", "flow_no", t.FlowNo, "err", err)
		return
	}
	if err := l.j.MarkApplied(ctx, t.FlowNo); err != nil {
		// Redis holds it; the hand-over finds it "exists" and marks it.
		l.log.Debug("mark a degraded sale applied", "flow_no", t.FlowNo, "err", err)
	}
}

// journalDegraded journals t in degraded mode under the node's next
// degraded flow number; it returns the row as journaled.
func (l *Ledger) journalDegraded(ctx context.Context, t journal.Txn, b body) (*Result, journal.Txn, error) {
	for {
		flow := l.nextDegradedFlow()
		t.FlowNo, t.Seq, t.Body, t.Mode, t.Applied = flow, 0, b.withFlow(flow), journal.ModeDegraded, false
		err := l.journalAppend(ctx, t)
		switch {
		case err == nil:
			return &Result{Body: t.Body, FlowNo: flow}, t, nil
		case errors.Is(err, journal.ErrDuplicateFlow):
			continue // another path took the number; take the next
		case errors.Is(err, journal.ErrDuplicateKey):
			r, err := l.byKey(ctx, t.TerminalID, t.IdemKey, t.Fingerprint)
			return r, t, err
		default:
			return nil, t, errJournal(err)
		}
	}
}

// journalDamaged refuses a sale or refund before it touches Redis once
// the journal's background quick_check found it damaged: the journal
// takes no write any more (offline/journal Damaged), so nothing would be
// recorded, and Redis is left as the journal knows it.
func (l *Ledger) journalDamaged() *Error {
	if err := l.j.Damaged(); err != nil {
		return errJournal(err)
	}
	return nil
}

func jlines(ls []Line) []journal.Line {
	out := make([]journal.Line, len(ls))
	for i, l := range ls {
		out[i] = journal.Line{Barcode: l.Barcode, Qty: l.Qty, PriceCents: l.PriceCents}
	}
	return out
}

// Batch records past sales a terminal made while it could not reach the
// daemon. Each is accepted whatever the stock or item master; each result
// is the one that sale alone would get.
func (l *Ledger) Batch(ctx context.Context, term string, sales []BatchSale) []BatchResult {
	out := make([]BatchResult, len(sales))
	for i, s := range sales {
		if s.Err != nil {
			out[i] = BatchResult{Err: s.Err}
			continue
		}
		r, err := l.record(ctx, term, s.Key, s.Sale, "batch")
		out[i] = BatchResult{Result: r, Err: asError(err)}
	}
	return out
}

// BatchResult is one sale's outcome in a batch.
type BatchResult struct {
	Result *Result
	Err    *Error
}

func asError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Errorf(KindInternal, "internal", "%v", err)
}
