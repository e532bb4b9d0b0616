package reconcile

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/lock"
	"github.com/posedge/posedge/offline/journal"
)

// snapshotScript reads, in one atomic step, the flow sequence, the
// counters of the days asked and the stock of every item: the counters
// and stock then hold exactly the transactions numbered up to the
// sequence (plus degraded ones applied before).
//
// KEYS[1] seq, then ARGV[1] daily keys, as many hourly keys, then items.
var snapshotScript = redis.NewScript(`
local out = {redis.call('GET', KEYS[1]) or '0'}
local nd = tonumber(ARGV[1])
for i = 2, 1 + 2 * nd do out[#out + 1] = redis.call('HGETALL', KEYS[i]) end
for i = 2 + 2 * nd, #KEYS do out[#out + 1] = redis.call('HGET', KEYS[i], 'stock') end
return out`)

// correctScript applies corrections, fenced: a reconciler whose lock was
// taken over writes nothing. Per key four arguments: op and its operands.
// Counter and stock corrections are deltas, so sales made meanwhile are
// kept; a missing item is restored only while it is still missing.
var correctScript = lock.NewScript(`
for i = 1, #KEYS do
  local op, a, b, c = ARGV[4 * i - 3], ARGV[4 * i - 2], ARGV[4 * i - 1], ARGV[4 * i]
  if op == 'counter' then
    redis.call('HINCRBY', KEYS[i], a, b)
    redis.call('EXPIRE', KEYS[i], 400 * 86400)
  elseif op == 'stock' then
    if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('HINCRBY', KEYS[i], 'stock', b) end
  elseif op == 'item' then
    if redis.call('EXISTS', KEYS[i]) == 0 then
      redis.call('HSET', KEYS[i], 'name', a, 'price_cents', b, 'stock', c)
    end
  end
end
return #KEYS`)

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

var counterNames = map[string]bool{"sales": true, "sales_cents": true, "refunds": true, "refund_cents": true}

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
	keys := []string{r.l.SeqKey()}
	for _, d := range days {
		keys = append(keys, r.l.DailyKey(d))
	}
	for _, d := range days {
		keys = append(keys, r.l.HourlyKey(d))
	}
	for _, b := range barcodes {
		keys = append(keys, r.l.ItemKey(b))
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	res, err := snapshotScript.Run(sctx, r.rdb, keys, len(days)).Slice()
	cancel()
	if err != nil {
		return nil, fmt.Errorf("snapshot redis counters and stock: %w", err)
	}
	if len(res) != 1+2*len(days)+len(barcodes) {
		return nil, fmt.Errorf("snapshot redis counters and stock: %d values for %d keys", len(res), len(keys))
	}
	lk.seq, _ = strconv.ParseInt(str(res[0]), 10, 64)
	if err := r.settle(ctx, lk.seq); err != nil {
		return nil, err
	}
	after, err := r.j.UnappliedDays(ctx)
	if err != nil {
		return nil, err
	}
	for d := range after {
		unapplied[d] = true
	}

	for i, d := range days {
		if unapplied[d] {
			lk.skipDays[d] = "degraded-mode sales not yet applied to redis (they are applied first)"
			continue
		}
		rows, err := r.j.DayTotalsUpTo(ctx, d, lk.seq)
		if err != nil {
			return nil, err
		}
		daily, hourly := expected(rows)
		lk.counters = append(lk.counters, compare(d, "daily", hashOf(res[1+i]), daily, dailyField)...)
		lk.counters = append(lk.counters, compare(d, "hourly", hashOf(res[1+len(days)+i]), hourly, hourlyField)...)
	}

	if len(unapplied) > 0 {
		lk.stockSkipped = "degraded-mode sales not yet applied to redis (they are applied first)"
		return lk, nil
	}
	items, err := r.j.ExpectedStock(ctx, lk.seq)
	if err != nil {
		return nil, err
	}
	exp := make(map[string]journal.ItemStock, len(items))
	for _, it := range items {
		exp[it.Barcode] = it
	}
	for k, b := range barcodes {
		it, ok := exp[b]
		if !ok {
			continue // deleted meanwhile
		}
		v := res[1+2*len(days)+k]
		if v == nil {
			lk.stock = append(lk.stock, StockDiff{Barcode: b, Expected: it.Expected, Drift: -it.Expected, name: it.Name, price: it.PriceCents})
			continue
		}
		n, err := strconv.ParseInt(str(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("item %s: stock %q in redis is not a number", b, str(v))
		}
		if n != it.Expected {
			lk.stock = append(lk.stock, StockDiff{Barcode: b, Redis: &n, Expected: it.Expected, Drift: n - it.Expected})
		}
	}
	return lk, nil
}

// settle waits (at most Settle) until the journal holds every sequence
// number just below seq: sales whose script ran before the snapshot but
// whose journal commit was still under way.
func (r *Reconciler) settle(ctx context.Context, seq int64) error {
	lo := seq - 200
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

// expected turns the journal's totals into the fields txn.lua keeps.
func expected(rows []journal.DayRow) (daily, hourly map[string]int64) {
	daily, hourly = map[string]int64{}, map[string]int64{}
	add := func(m map[string]int64, prefix string, t journal.DayTotals) {
		m[prefix+"sales"] += t.Sales
		m[prefix+"sales_cents"] += t.SalesCents
		m[prefix+"refunds"] += t.Refunds
		m[prefix+"refund_cents"] += t.RefundCents
	}
	for _, row := range rows {
		add(daily, "t:"+row.TerminalID+":", row.Totals)
		add(daily, "x:"+row.Tender+":", row.Totals)
		add(hourly, row.Hour+":", row.Totals)
	}
	return daily, hourly
}

// dailyField and hourlyField tell the counter fields txn.lua writes from
// anything else a hash may hold (left alone).
func dailyField(f string) bool {
	p := strings.Split(f, ":")
	return len(p) == 3 && (p[0] == "t" || p[0] == "x") && counterNames[p[2]]
}

func hourlyField(f string) bool {
	h, c, ok := strings.Cut(f, ":")
	return ok && len(h) == 2 && h >= "00" && h <= "23" && counterNames[c]
}

func compare(day, key string, red map[string]int64, want map[string]int64, known func(string) bool) []Diff {
	var out []Diff
	for f, v := range red {
		if known(f) && v != want[f] {
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

func hashOf(v any) map[string]int64 {
	flat, _ := v.([]any)
	m := make(map[string]int64, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		n, err := strconv.ParseInt(str(flat[i+1]), 10, 64)
		if err == nil {
			m[str(flat[i])] = n
		}
	}
	return m
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// correct applies the confirmed corrections under the fence, in chunks.
func (r *Reconciler) correct(ctx context.Context, lk *lock.Lock, counters []Diff, stock []StockDiff) (int, error) {
	var keys []string
	var args []any
	for _, d := range counters {
		k := r.l.DailyKey(d.Day)
		if d.Key == "hourly" {
			k = r.l.HourlyKey(d.Day)
		}
		keys = append(keys, k)
		args = append(args, "counter", d.Field, d.delta(), "")
	}
	for _, s := range stock {
		keys = append(keys, r.l.ItemKey(s.Barcode))
		if s.Redis == nil {
			args = append(args, "item", s.name, s.price, s.Expected)
		} else {
			args = append(args, "stock", "", -s.Drift, "")
		}
	}
	done := 0
	const chunk = 250
	for i := 0; i < len(keys); i += chunk {
		j := min(i+chunk, len(keys))
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := lk.Run(cctx, correctScript, keys[i:j], args[4*i:4*j]...)
		cancel()
		if err != nil {
			return done, fmt.Errorf("correct redis from the journal: %w", err)
		}
		done += j - i
	}
	return done, nil
}
