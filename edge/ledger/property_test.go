package ledger_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// The property test's seed: a new one each run (so every run explores),
// printed first so a failure can be replayed with -seed N or
// POSEDGE_PROPERTY_SEED=N.
var seedFlag = flag.Int64("seed", 0, "seed of TestLedgerProperty (0: POSEDGE_PROPERTY_SEED, else a new one)")

func propertySeed(t *testing.T) int64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if s := os.Getenv("POSEDGE_PROPERTY_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("POSEDGE_PROPERTY_SEED=%q: %v", s, err)
		}
		return n
	}
	return time.Now().UnixNano()
}

// dayModel is what one business day's counters must hold: the store's,
// each terminal's and each tender's.
type dayModel struct {
	total            ledger.Totals
	terminal, tender map[string]ledger.Totals
}

// model is what the ledger must hold after the accepted operations,
// computed from the requests alone.
type model struct {
	initial, sold, refunded map[string]int64
	days                    map[string]*dayModel
	sales                   []*modelSale // accepted sales, refundable
	done                    []sent       // accepted requests, for replays
}

// modelSale is an accepted sale as refunds see it: per barcode the price
// of each unit in the order of the sale's lines (a barcode may be on
// several lines at several prices; refunds take units in that order, as
// docs/design.md "Refunds" says), and how many units are refunded.
type modelSale struct {
	flow, tender string
	units        map[string][]int64
	refunded     map[string]int64
	barcodes     []string
}

type sent struct {
	term, key string
	sale      *ledger.SaleRequest
	refund    *ledger.RefundRequest
	flow      string
	body      string
}

const propMaxCents = 100_000_000_000

// amountCode is the refusal a request with these lines and total must
// get, or "" when its amounts are acceptable, from the contract's rules
// (§3) computed independently of the ledger (products are small enough
// here not to overflow int64).
func amountCode(lines []ledger.Line, total int64) string {
	var sum int64
	for _, l := range lines {
		if l.PriceCents > propMaxCents || l.Qty*l.PriceCents > propMaxCents {
			return "invalid_amount"
		}
		sum += l.Qty * l.PriceCents
	}
	switch {
	case total < 0 || total > propMaxCents || sum > propMaxCents:
		return "invalid_amount"
	case sum != total:
		return "total_mismatch"
	}
	return ""
}

// Random sequences of sales (duplicate barcodes, wrong totals, beyond
// stock), refunds (too many, wrong totals), batch uploads, replays (same
// key and body, and the key reused), tills racing for scarce stock and
// double-sending one key, daemon restarts, spells of degraded mode, and
// real Redis link faults (the connection reset; a script run whose answer
// is lost) keep, to the cent: stock = initial − sold + refunded per item;
// Redis's day counters = the journal's = the model's, for the store,
// each terminal and each tender; every answer is the one the model
// predicts (accepted or refused with its code, replayed with the first
// body).
func TestLedgerProperty(t *testing.T) {
	seed := propertySeed(t)
	t.Logf("seed %d (rerun with -seed %d or POSEDGE_PROPERTY_SEED=%d)", seed, seed, seed)
	rng := rand.New(rand.NewSource(seed))
	e := newProxiedEnv(t, journal.Options{})
	m := &model{initial: map[string]int64{}, sold: map[string]int64{}, refunded: map[string]int64{}, days: map[string]*dayModel{}}
	barcodes := []string{"A", "B", "C", "D", "E", "F"}
	for i, b := range barcodes {
		stock := int64(rng.Intn(200))
		if i == 0 {
			stock = int64(rng.Intn(8)) // scarce: tills race for it
		}
		e.putItem(b, int64(100*(i+1)), stock)
		m.initial[b] = stock
	}
	prices := []int64{0, 1, 3, 99, 199, 12345, 999_999_999, 40_000_000_000}
	terms := []string{"T01", "T02", "T03", "T04"}
	tenders := []string{"cash", "card", "mobile", "other"}
	degraded := false
	n := 0
	key := func() string { n++; return fmt.Sprintf("k%d", n) }
	stockNow := func(b string) int64 { return m.initial[b] - m.sold[b] + m.refunded[b] }
	var ops = map[string]int{}
	count := func(body []byte, term, tender, kind string, cents int64) {
		var b struct {
			OccurredAt string `json:"occurred_at"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatalf("result body %s: %v", body, err)
		}
		at, err := time.Parse(time.RFC3339Nano, b.OccurredAt)
		if err != nil {
			t.Fatalf("occurred_at of %s: %v", body, err)
		}
		day := e.l.Day(at)
		d := m.days[day]
		if d == nil {
			d = &dayModel{terminal: map[string]ledger.Totals{}, tender: map[string]ledger.Totals{}}
			m.days[day] = d
		}
		d.total.Add(kind, cents)
		tt, td := d.terminal[term], d.tender[tender]
		tt.Add(kind, cents)
		td.Add(kind, cents)
		d.terminal[term], d.tender[tender] = tt, td
	}
	randomSale := func() ledger.SaleRequest {
		var s ledger.SaleRequest
		for i := 0; i < 1+rng.Intn(3); i++ {
			b := barcodes[rng.Intn(len(barcodes))] // repeats: the same barcode on two lines
			l := ledger.Line{Barcode: b, Qty: 1 + rng.Int63n(5), PriceCents: prices[rng.Intn(len(prices))]}
			s.Lines = append(s.Lines, l)
			s.TotalCents += l.Qty * l.PriceCents // small enough: ≤ 3 × 5 × 4×10^10
		}
		if rng.Intn(10) == 0 { // a till that adds up wrong
			s.TotalCents += []int64{-1, 1, 100, -s.TotalCents - 1}[rng.Intn(4)]
		}
		s.Tender = tenders[rng.Intn(len(tenders))]
		return s
	}
	// enough: the stock covers the sale, duplicate barcodes summed.
	enough := func(s ledger.SaleRequest) bool {
		want := map[string]int64{}
		for _, l := range s.Lines {
			want[l.Barcode] += l.Qty
		}
		for b, q := range want {
			if stockNow(b) < q {
				return false
			}
		}
		return true
	}
	accept := func(term, key string, s ledger.SaleRequest, r *ledger.Result) {
		ms := &modelSale{flow: r.FlowNo, tender: s.Tender, units: map[string][]int64{}, refunded: map[string]int64{}}
		for _, l := range s.Lines {
			m.sold[l.Barcode] += l.Qty
			if _, ok := ms.units[l.Barcode]; !ok {
				ms.barcodes = append(ms.barcodes, l.Barcode)
			}
			for q := int64(0); q < l.Qty; q++ {
				ms.units[l.Barcode] = append(ms.units[l.Barcode], l.PriceCents)
			}
		}
		m.sales = append(m.sales, ms)
		s2 := s
		m.done = append(m.done, sent{term: term, key: key, sale: &s2, flow: r.FlowNo, body: string(r.Body)})
		count(r.Body, term, s.Tender, "sale", s.TotalCents)
	}
	// sale sends one sale and checks its answer against the model.
	sale := func(step int, term, k string, s ledger.SaleRequest) {
		r, err := e.l.Sale(e.ctx, term, k, s)
		switch code := amountCode(s.Lines, s.TotalCents); {
		case code != "":
			if refusal(t, err).Code != code {
				t.Fatalf("step %d: sale %+v: %v, want %s", step, s, err, code)
			}
		case degraded || enough(s):
			if err != nil {
				t.Fatalf("step %d: sale refused: %v", step, err)
			}
			accept(term, k, s, r)
		default:
			if refusal(t, err).Code != "insufficient_stock" {
				t.Fatalf("step %d: sale beyond stock: %v", step, err)
			}
		}
	}
	check := func(step int) {
		t.Helper()
		for _, b := range barcodes {
			if got, want := e.stock(b), stockNow(b); got != want {
				t.Fatalf("step %d: stock of %s %d, want %d = %d − %d + %d", step, b, got, want, m.initial[b], m.sold[b], m.refunded[b])
			}
		}
		for day, want := range m.days {
			d, err := e.l.DailyStats(e.ctx, day)
			if err != nil || d.Source != "redis" {
				t.Fatalf("step %d: daily stats of %s: %+v %v", step, day, d, err)
			}
			rows, err := e.j.DayTotalsByGroup(e.ctx, day)
			if err != nil {
				t.Fatal(err)
			}
			var fromJournal ledger.Totals
			jTerm, jTender := map[string]ledger.Totals{}, map[string]ledger.Totals{}
			for _, r := range rows {
				fromJournal.Sales += r.Totals.Sales
				fromJournal.SalesCents += r.Totals.SalesCents
				fromJournal.Refunds += r.Totals.Refunds
				fromJournal.RefundCents += r.Totals.RefundCents
				for _, g := range []struct {
					m map[string]ledger.Totals
					k string
				}{{jTerm, r.TerminalID}, {jTender, r.Tender}} {
					x := g.m[g.k]
					x.Sales += r.Totals.Sales
					x.SalesCents += r.Totals.SalesCents
					x.Refunds += r.Totals.Refunds
					x.RefundCents += r.Totals.RefundCents
					g.m[g.k] = x
				}
			}
			if d.Totals != want.total || fromJournal != want.total {
				t.Fatalf("step %d, day %s: redis %+v, journal %+v, model %+v", step, day, d.Totals, fromJournal, want.total)
			}
			for _, term := range terms {
				if d.Terminals[term] != want.terminal[term] || jTerm[term] != want.terminal[term] {
					t.Fatalf("step %d, day %s, terminal %s: redis %+v, journal %+v, model %+v", step, day, term, d.Terminals[term], jTerm[term], want.terminal[term])
				}
			}
			for _, td := range tenders {
				if d.Tenders[td] != want.tender[td] || jTender[td] != want.tender[td] {
					t.Fatalf("step %d, day %s, tender %s: redis %+v, journal %+v, model %+v", step, day, td, d.Tenders[td], jTender[td], want.tender[td])
				}
			}
		}
	}
	// recover heals the link and brings Redis back as the daemon's watch
	// does: repair, then out of degraded mode.
	recoverRedis := func(step int) {
		e.proxy.Set(testenv.Reset, 0) // a reply cut mid-stream is not read as the next
		e.proxy.Set(testenv.Pass, 0)
		retryRedis(t, step, "repair", func() error { return e.l.Repair(e.ctx) })
		e.l.SetRedisDown(false)
		degraded = false
		check(step)
	}

	const steps = 400
	faults := 0
	for step := 0; step < steps; step++ {
		term := terms[rng.Intn(len(terms))]
		switch op := rng.Intn(100); {
		case op < 30: // a sale at the till
			ops["sale"]++
			sale(step, term, key(), randomSale())
		case op < 40: // a batch upload of past sales: accepted whatever the stock
			ops["batch"]++
			var batch []ledger.BatchSale
			for i := 0; i < 1+rng.Intn(4); i++ {
				s := randomSale()
				s.OccurredAt = new(time.Now().UTC().Add(-time.Duration(rng.Intn(300)) * time.Second).Format(time.RFC3339))
				batch = append(batch, ledger.BatchSale{Key: key(), Sale: s})
			}
			for i, res := range e.l.Batch(e.ctx, term, batch) {
				s := batch[i].Sale
				if code := amountCode(s.Lines, s.TotalCents); code != "" {
					if res.Err == nil || res.Err.Code != code {
						t.Fatalf("step %d: batch sale %+v: %+v, want %s", step, s, res, code)
					}
					continue
				}
				if res.Err != nil || res.Result.Replayed {
					t.Fatalf("step %d: batch sale %d: %+v %v", step, i, res.Result, res.Err)
				}
				accept(term, batch[i].Key, s, res.Result)
			}
		case op < 62: // a refund of part of an earlier sale, sometimes too much or mistotalled
			ops["refund"]++
			if len(m.sales) == 0 {
				continue
			}
			ms := m.sales[rng.Intn(len(m.sales))]
			var req ledger.RefundRequest
			want := map[string]int64{}
			var value int64
			over := false
			for i := 0; i < 1+rng.Intn(2); i++ {
				b := ms.barcodes[rng.Intn(len(ms.barcodes))]
				qty := 1 + rng.Int63n(3)
				req.Lines = append(req.Lines, ledger.RefundLine{Barcode: b, Qty: qty})
				from := ms.refunded[b] + want[b]
				want[b] += qty
				if from+qty > int64(len(ms.units[b])) {
					over = true
					continue
				}
				for _, p := range ms.units[b][from : from+qty] {
					value += p
				}
			}
			req.OriginalFlowNo, req.TotalCents = ms.flow, value
			wrong := rng.Intn(8) == 0
			if wrong {
				req.TotalCents++
			}
			k := key()
			r, err := e.l.Refund(e.ctx, term, k, req)
			switch {
			case over:
				if refusal(t, err).Code != "refund_exceeds_sale" {
					t.Fatalf("step %d: refund beyond the sale: %v", step, err)
				}
			case value > propMaxCents:
				if refusal(t, err).Code != "invalid_amount" {
					t.Fatalf("step %d: refund of %d cents: %v", step, value, err)
				}
			case wrong:
				if refusal(t, err).Code != "total_mismatch" {
					t.Fatalf("step %d: refund worth %d told %d: %v", step, value, req.TotalCents, err)
				}
			default:
				if err != nil {
					t.Fatalf("step %d: refund %+v refused: %v", step, req, err)
				}
				for b, q := range want {
					ms.refunded[b] += q
					m.refunded[b] += q
				}
				m.done = append(m.done, sent{term: term, key: k, refund: &req, flow: r.FlowNo, body: string(r.Body)})
				count(r.Body, term, ms.tender, "refund", value)
			}
		case op < 76: // a retry: the same key and body, or the key reused
			ops["retry"]++
			if len(m.done) == 0 {
				continue
			}
			d := m.done[rng.Intn(len(m.done))]
			var r *ledger.Result
			var err error
			reuse := rng.Intn(4) == 0
			switch {
			case d.sale != nil && reuse:
				other := *d.sale
				other.Tender = map[bool]string{true: "card", false: "cash"}[other.Tender == "cash"]
				_, err = e.l.Sale(e.ctx, d.term, d.key, other)
			case d.sale != nil && d.sale.OccurredAt != nil:
				out := e.l.Batch(e.ctx, d.term, []ledger.BatchSale{{Key: d.key, Sale: *d.sale}})
				r = out[0].Result
				if out[0].Err != nil {
					err = out[0].Err
				}
			case d.sale != nil:
				r, err = e.l.Sale(e.ctx, d.term, d.key, *d.sale)
			case reuse:
				other := *d.refund
				other.TotalCents++
				_, err = e.l.Refund(e.ctx, d.term, d.key, other)
			default:
				r, err = e.l.Refund(e.ctx, d.term, d.key, *d.refund)
			}
			if reuse {
				if refusal(t, err).Code != "idempotency_key_reused" {
					t.Fatalf("step %d: reused key: %v", step, err)
				}
				continue
			}
			if err != nil || !r.Replayed || r.FlowNo != d.flow || string(r.Body) != d.body {
				t.Fatalf("step %d: replay of %s: %+v %v", step, d.key, r, err)
			}
		case op < 84: // every till at once for the scarce item, one of them sending its sale twice
			ops["race"]++
			before := stockNow("A")
			type try struct {
				term, key string
				s         ledger.SaleRequest
				r         *ledger.Result
				err       error
			}
			tries := make([]*try, len(terms))
			for i, tm := range terms {
				s := ledger.SaleRequest{Lines: []ledger.Line{{Barcode: "A", Qty: 1 + rng.Int63n(3), PriceCents: 100}}, Tender: tenders[rng.Intn(len(tenders))]}
				s.TotalCents = s.Lines[0].Qty * 100
				tries[i] = &try{term: tm, key: key(), s: s}
			}
			twice := &try{term: tries[0].term, key: tries[0].key, s: tries[0].s}
			var wg sync.WaitGroup
			for _, tr := range append(tries, twice) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					tr.r, tr.err = e.l.Sale(e.ctx, tr.term, tr.key, tr.s)
				}()
			}
			wg.Wait()
			// The double send is one sale: one of the two has its
			// answer, the other the same answer or "retry, in flight",
			// never a second sale.
			first, second := tries[0], twice
			if first.err != nil && refusal(t, first.err).Code == "request_in_progress" {
				first, second = twice, tries[0]
			}
			switch {
			case second.err != nil:
				c := refusal(t, second.err).Code
				if c != "request_in_progress" && (first.err == nil || c != refusal(t, first.err).Code) {
					t.Fatalf("step %d: the double send got %v, the first %+v %v", step, second.err, first.r, first.err)
				}
			case first.err != nil || second.r.FlowNo != first.r.FlowNo || string(second.r.Body) != string(first.r.Body):
				t.Fatalf("step %d: the double send got %+v, the first %+v %v", step, second.r, first.r, first.err)
			}
			tries[0] = first
			var took int64
			flows := map[string]bool{}
			var refused []*try
			for _, tr := range tries {
				if tr.err != nil {
					if c := refusal(t, tr.err).Code; c != "insufficient_stock" || degraded {
						t.Fatalf("step %d: racing sale of %d on %s (degraded %v): %v", step, tr.s.Lines[0].Qty, tr.term, degraded, tr.err)
					}
					refused = append(refused, tr)
					continue
				}
				if flows[tr.r.FlowNo] {
					t.Fatalf("step %d: flow %s given to two racing sales", step, tr.r.FlowNo)
				}
				flows[tr.r.FlowNo] = true
				took += tr.s.Lines[0].Qty
				accept(tr.term, tr.key, tr.s, tr.r)
			}
			if !degraded && took > max(before, 0) { // stock below zero: batches and degraded sales are taken whatever it is
				t.Fatalf("step %d: racing tills took %d of a stock of %d", step, took, before)
			}
			for _, tr := range refused {
				// Stock only fell during the race: a sale refused for
				// stock must not fit in what is left after it.
				if q := tr.s.Lines[0].Qty; q <= before-took {
					t.Fatalf("step %d: a sale of %d refused for stock, %d left after the race", step, q, before-took)
				}
			}
		case op < 88: // the daemon restarts (its journal and Redis stay) and starts up as posedge does
			ops["restart"]++
			e.proxy.Set(testenv.Reset, 0)
			e.proxy.Set(testenv.Pass, 0)
			e.restart(journal.Options{})
			retryRedis(t, step, "start after a restart", func() error { _, err := e.l.Start(e.ctx); return err })
			degraded = false
			check(step)
		case op < 91: // the Redis link fails under a sale: reset, or the script runs and its answer is lost
			if degraded || faults >= 4 {
				continue
			}
			faults++
			f := []testenv.Fault{testenv.Reset, testenv.DropAnswers}[rng.Intn(2)]
			ops["fault "+f.String()]++
			_, lostBefore := e.proxy.AnswersLost()
			e.proxy.Set(f, 0)
			s := randomSale()
			k := key()
			r, err := e.l.Sale(e.ctx, term, k, s)
			if _, lost := e.proxy.AnswersLost(); f == testenv.DropAnswers && amountCode(s.Lines, s.TotalCents) == "" && lost == lostBefore {
				t.Fatalf("step %d: a sale under %s lost no answer from Redis: the fault missed its window", step, f)
			}
			// The ledger falls back to the journal (degraded mode): the
			// sale is taken whatever the stock, exactly once.
			if code := amountCode(s.Lines, s.TotalCents); code != "" {
				if refusal(t, err).Code != code {
					t.Fatalf("step %d: sale %+v under %s: %v, want %s", step, s, f, err, code)
				}
			} else {
				if err != nil {
					t.Fatalf("step %d: sale under %s: %v", step, f, err)
				}
				if !e.l.Degraded() {
					t.Fatalf("step %d: a sale under %s left the ledger out of degraded mode", step, f)
				}
				degraded = true
				accept(term, k, s, r)
			}
			recoverRedis(step)
		default: // Redis is down for a while, then back and repaired
			ops["degraded"]++
			if !degraded {
				e.l.SetRedisDown(true)
				degraded = true
				continue
			}
			recoverRedis(step)
		}
	}
	if degraded {
		recoverRedis(steps)
	}
	check(steps)
	if st, _ := e.j.Stats(e.ctx); st.Unapplied != 0 || st.Unappliable != 0 {
		t.Fatalf("journal after the run: %+v", st)
	}
	t.Logf("%d accepted transactions, %d items; operations %v", len(m.done), len(barcodes), ops)
}

// retryRedis runs a start-up or repair step as the daemon's watch does,
// again on its next tick when it fails: the first command after a healed
// link may still meet a pooled connection the reset closed (EOF). Three
// failures in a row fail the test.
func retryRedis(t *testing.T, step int, what string, f func() error) {
	t.Helper()
	var err error
	for range 3 {
		if err = f(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("step %d: %s: %v", step, what, err)
}
