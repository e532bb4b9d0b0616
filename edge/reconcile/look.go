package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/lock"
	"github.com/posedge/posedge/offline/journal"
)

// look is one comparison of Redis with the journal.
type look struct {
	runID        string
	seq          int64
	counters     []Diff
	stock        []StockDiff
	stockSkipped string
	skipDays     map[string]string
}

func (l *look) empty() bool { return len(l.counters) == 0 && len(l.stock) == 0 }

// skipped lists what the look left alone, and why.
func (l *look) skipped() []string {
	days := make([]string, 0, len(l.skipDays))
	for d := range l.skipDays {
		days = append(days, d)
	}
	sort.Strings(days)
	var out []string
	for _, d := range days {
		out = append(out, d+": "+l.skipDays[d])
	}
	if l.stockSkipped != "" {
		out = append(out, "stock: "+l.stockSkipped)
	}
	return out
}

func (r *Reconciler) look(ctx context.Context, days []string) (*look, error) {
	lk := &look{skipDays: map[string]string{}}
	var err error
	if lk.runID, err = r.l.MasterRunID(ctx); err != nil {
		return nil, fmt.Errorf("identify the redis master: %w", err)
	}
	unapplied, err := r.j.UnappliedDays(ctx)
	if err != nil {
		return nil, err
	}
	barcodes, err := r.j.ItemBarcodes(ctx)
	if err != nil {
		return nil, err
	}
	// The counters and the sequence in one script (a few keys); the
	// stock in chunks of StockChunk items, each read with the sequence
	// it stood at: one script over every item of a large catalog held
	// Redis for 170 ms at 100,000 items (idle) and over 300 ms on a
	// loaded store, and the sales waiting behind it went degraded.
	snap, err := r.l.Snapshot(ctx, days, nil)
	if err != nil {
		return nil, err
	}
	lk.seq = snap.Seq
	reads, err := r.readStock(ctx, barcodes, snap.Seq)
	if err != nil {
		return nil, err
	}
	upTo := lk.seq
	if n := len(reads); n > 0 {
		upTo = reads[n-1].seq
	}
	if err := r.settle(ctx, lk.seq, upTo); err != nil {
		return nil, err
	}
	after, err := r.j.UnappliedDays(ctx)
	if err != nil {
		return nil, err
	}
	for d := range after {
		unapplied[d] = true
	}

	for _, d := range days {
		if unapplied[d] {
			lk.skipDays[d] = "degraded-mode sales not yet applied to redis (they are applied first)"
			continue
		}
		rows, err := r.j.DayTotalsUpTo(ctx, d, lk.seq)
		if err != nil {
			return nil, err
		}
		daily, hourly := ledger.ExpectedCounters(rows)
		lk.counters = append(lk.counters, compare(d, "daily", snap.Daily[d], daily)...)
		lk.counters = append(lk.counters, compare(d, "hourly", snap.Hourly[d], hourly)...)
	}

	if len(unapplied) > 0 {
		lk.stockSkipped = "degraded-mode sales not yet applied to redis (they are applied first)"
		return lk, nil
	}
	// Expected at upTo, the last read's sequence; a chunk read earlier is
	// compared with that minus what the sales between took.
	items, err := r.j.ExpectedStock(ctx, upTo)
	if err != nil {
		return nil, err
	}
	exp := make(map[string]journal.ItemStock, len(items))
	for _, it := range items {
		exp[it.Barcode] = it
	}
	for _, rd := range reads {
		var since map[string]int64
		if rd.seq < upTo {
			if since, err = r.j.StockMovesBetween(ctx, rd.seq, upTo); err != nil {
				return nil, err
			}
		}
		for _, b := range rd.barcodes {
			it, ok := exp[b]
			if !ok {
				continue // deleted meanwhile
			}
			it.Expected += since[b]
			n, ok := rd.stock[b]
			if !ok {
				lk.stock = append(lk.stock, StockDiff{Barcode: b, Expected: it.Expected, Drift: -it.Expected, item: it})
				continue
			}
			if n != it.Expected {
				lk.stock = append(lk.stock, StockDiff{Barcode: b, Redis: &n, Expected: it.Expected, Drift: n - it.Expected})
			}
		}
	}
	return lk, nil
}

// StockChunk is how many items' stock one script reads: ~2 ms of Redis
// each, so sales interleave with a large catalog's reconciliation.
const StockChunk = 1000

// stockRead is one chunk of items' stock as Redis held it when its flow
// sequence stood at seq.
type stockRead struct {
	seq      int64
	barcodes []string
	stock    map[string]int64
}

// readStock reads the stock of barcodes in chunks, each with the flow
// sequence it was read at. The sequence only grows on one master; one
// that went back (a failover to a replica that lost writes) fails the
// look, as a master change between looks skips the run.
func (r *Reconciler) readStock(ctx context.Context, barcodes []string, from int64) ([]stockRead, error) {
	chunk := cmp.Or(r.stockChunk, StockChunk)
	var reads []stockRead
	last := from
	for lo := 0; lo < len(barcodes); lo += chunk {
		part := barcodes[lo:min(lo+chunk, len(barcodes))]
		s, err := r.l.Snapshot(ctx, nil, part)
		if err != nil {
			return nil, err
		}
		if s.Seq < last {
			return nil, fmt.Errorf("read redis stock: the flow sequence went back from %d to %d between reads (a failover?)", last, s.Seq)
		}
		last = s.Seq
		reads = append(reads, stockRead{seq: s.Seq, barcodes: part, stock: s.Stock})
		if r.betweenStockReads != nil {
			r.betweenStockReads(len(reads))
		}
	}
	return reads, nil
}

// settle waits (at most Settle) until the journal holds every sequence
// number from just below from up to seq: sales whose script ran before
// the reads but whose journal commit was still under way.
func (r *Reconciler) settle(ctx context.Context, from, seq int64) error {
	lo := from - 200
	for _, k := range []string{journal.MetaGapCheckedSeq, journal.MetaPrunedMaxSeq} {
		v, err := r.j.MetaInt(ctx, k)
		if err != nil {
			return err
		}
		lo = max(lo, v)
	}
	minSeq, err := r.j.MinSeq(ctx)
	if err != nil {
		return err
	}
	lo = max(lo, minSeq-1, 0)
	deadline := time.Now().Add(r.cfg.Settle)
	for {
		missing, err := r.j.MissingSeqs(ctx, lo, seq)
		if err != nil {
			return err
		}
		if missing == 0 || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// compare lists the counter fields Redis (red) holds differently from
// the journal (want).
func compare(day, key string, red map[string]int64, want map[string]int64) []Diff {
	var out []Diff
	for f, v := range red {
		if v != want[f] {
			out = append(out, Diff{Day: day, Key: key, Field: f, Redis: v, Journal: want[f]})
		}
	}
	for f, v := range want {
		if _, ok := red[f]; !ok && v != 0 {
			out = append(out, Diff{Day: day, Key: key, Field: f, Redis: 0, Journal: v})
		}
	}
	return out
}

// correct applies the confirmed corrections under the fence.
func (r *Reconciler) correct(ctx context.Context, lk *lock.Lock, counters []Diff, stock []StockDiff) (int, error) {
	var c ledger.Corrections
	for _, d := range counters {
		c.Counters = append(c.Counters, ledger.CounterDelta{Day: d.Day, Hourly: d.Key == "hourly", Field: d.Field, Delta: d.delta()})
	}
	for _, s := range stock {
		if s.Redis == nil {
			c.Restore = append(c.Restore, ledger.RestoredItem{Item: ledger.Item{Barcode: s.Barcode, Name: s.item.Name,
				PriceCents: s.item.PriceCents, Stock: s.Expected}, Active: s.item.Active, Revision: s.item.Revision, Source: s.item.Source})
		} else {
			c.Stock = append(c.Stock, ledger.StockDelta{Barcode: s.Barcode, Delta: -s.Drift})
		}
	}
	return r.l.Correct(ctx, lk, c)
}
