package ledger

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/posedge/posedge/offline/journal"
)

// Refund records a refund against an earlier sale of the store (any
// terminal's), at the original prices and tender, never more than what is
// left of each line.
func (l *Ledger) Refund(ctx context.Context, term, key string, r RefundRequest) (*Result, error) {
	if e := validKey(key); e != nil {
		return nil, e
	}
	bounds := l.Bounds()
	if e := r.Validate(bounds); e != nil {
		return nil, e
	}
	if e := l.journalDamaged(); e != nil {
		return nil, e
	}
	fp := Fingerprint(r)
	if !l.claim(term, key) {
		return nil, errInProgress()
	}
	defer l.release(term, key)
	if res, err := l.fromJournal(ctx, term, key, fp); res != nil || err != nil {
		return res, err
	}
	orig, err := l.j.ByFlow(ctx, r.OriginalFlowNo)
	if err != nil {
		return nil, errJournal(err)
	}
	if orig == nil || orig.Kind != "sale" {
		return nil, Errorf(KindNotFound, "sale_not_found", "no sale %s in this store's journal", r.OriginalFlowNo)
	}
	// One refund of a given sale at a time in this daemon; Redis checks
	// across daemons inside the script.
	mu, _ := l.refundLocks.LoadOrStore(orig.FlowNo, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()

	sold := map[string]int64{}
	for _, ln := range orig.Lines {
		sold[ln.Barcode] += ln.Qty
	}
	refunded, err := l.j.RefundedQty(ctx, orig.FlowNo)
	if err != nil {
		return nil, errJournal(err)
	}
	if !l.Degraded() {
		l.raiseRefunded(ctx, orig.FlowNo, refunded)
	}
	want := map[string]int64{}
	var lines []Line
	for _, ln := range r.Lines {
		if _, ok := sold[ln.Barcode]; !ok {
			return nil, Errorf(KindConflict, "refund_exceeds_sale", "barcode %s is not in sale %s", ln.Barcode, orig.FlowNo)
		}
		if refunded[ln.Barcode]+want[ln.Barcode]+ln.Qty > sold[ln.Barcode] {
			return nil, Errorf(KindConflict, "refund_exceeds_sale", "refund of %s exceeds what is left of the sale (%d)",
				ln.Barcode, sold[ln.Barcode]-refunded[ln.Barcode])
		}
		lines = append(lines, priceUnits(orig.Lines, ln.Barcode, refunded[ln.Barcode]+want[ln.Barcode], ln.Qty)...)
		want[ln.Barcode] += ln.Qty
	}
	// The refund's value at the original prices, checked like a sale's:
	// an original line within bounds can still make a refund above them
	// when max_sale_cents was lowered since.
	total, e := sumLines(lines, bounds.max())
	if e != nil {
		return nil, e
	}
	if total != r.TotalCents {
		return nil, Errorf(KindInvalid, "total_mismatch", "total_cents %d is not the refund's value at the original prices, %d", r.TotalCents, total)
	}
	now := l.now().UTC()
	day, hour := l.dayHour(now)
	b := body{StoreID: l.cfg.StoreID, TerminalID: term, Kind: "refund", TotalCents: total, Tender: orig.Tender,
		Lines: lines, OriginalFlowNo: orig.FlowNo, CreatedAt: now.Format(time.RFC3339Nano), OccurredAt: now.Format(time.RFC3339Nano)}
	t := journal.Txn{TerminalID: term, IdemKey: key, Fingerprint: fp, Kind: "refund", OriginalFlowNo: orig.FlowNo,
		Tender: orig.Tender, TotalCents: total, BusinessDay: day, BusinessHour: hour, CreatedAt: now, Lines: jlines(lines)}
	if l.heldDegraded() {
		return l.recordHeld(ctx, t, b)
	}
	a := txnArgs{mode: "refund", term: term, key: key, fp: fp, tender: orig.Tender, day: day, hour: hour,
		total: total, bodyRest: b.rest(), tokenForm: IsTokenForm(key), refundOf: orig.FlowNo}
	for _, ln := range lines {
		// refundedJr: the count the lines were priced with; the script
		// refuses the refund if Redis holds more (another daemon refunded
		// meanwhile), so no unit is priced twice.
		a.lines = append(a.lines, scriptLine{barcode: ln.Barcode, qty: ln.Qty, sold: sold[ln.Barcode], refundedJr: refunded[ln.Barcode]})
	}
	return l.apply(ctx, a, t, b)
}

// priceUnits prices the units skip+1 … skip+qty of barcode in the
// original's line order (docs/design.md, Refunds): one refund line per
// original line they fall on. The caller has checked skip+qty ≤ sold.
func priceUnits(orig []journal.Line, barcode string, skip, qty int64) []Line {
	var out []Line
	for _, ol := range orig {
		if ol.Barcode != barcode || qty == 0 {
			continue
		}
		if skip >= ol.Qty {
			skip -= ol.Qty
			continue
		}
		take := min(ol.Qty-skip, qty)
		skip = 0
		qty -= take
		if n := len(out); n > 0 && out[n-1].PriceCents == ol.PriceCents {
			out[n-1].Qty += take // same price on consecutive lines: one refund line
			continue
		}
		out = append(out, Line{Barcode: barcode, Qty: take, PriceCents: ol.PriceCents})
	}
	return out
}

// raiseRefunded raises the journal's refunded counts to Redis's where
// Redis knows of more (a refund recorded through another daemon), so the
// refund is priced after them. Redis unreachable: the journal's counts,
// and the script refuses if Redis turns out to hold more.
func (l *Ledger) raiseRefunded(ctx context.Context, flow string, refunded map[string]int64) {
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	got, err := l.rdb.HGetAll(rctx, l.k.Refunded(flow)).Result()
	if err != nil {
		return
	}
	for b, v := range got {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil && n > refunded[b] {
			refunded[b] = n
		}
	}
}

// Get returns a journaled sale or refund by flow number.
func (l *Ledger) Get(ctx context.Context, flow string) ([]byte, error) {
	t, err := l.j.ByFlow(ctx, flow)
	if err != nil {
		return nil, errJournal(err)
	}
	if t == nil {
		return nil, Errorf(KindNotFound, "sale_not_found", "no sale or refund %s in this store's journal", flow)
	}
	return t.Body, nil
}
