package ledger_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/offline/journal"
)

// The property test's seed: fixed so a run is repeatable, printed so a
// failure can be replayed, changed with -seed N or POSEDGE_PROPERTY_SEED.
var seedFlag = flag.Int64("seed", 0, "seed of TestLedgerProperty (0: POSEDGE_PROPERTY_SEED, else the fixed default)")

const defaultPropertySeed = 20261201

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
	return defaultPropertySeed
}

// model is what the ledger must hold after the accepted operations.
type model struct {
	initial, sold, refunded map[string]int64
	days                    map[string]ledger.Totals // business day → counters
	sales                   []modelSale              // accepted sales, refundable
	done                    []sent                   // accepted requests, for replays
}

type modelSale struct {
	flow         string
	price, left  map[string]int64 // per barcode: price, quantity not yet refunded
	barcodeOrder []string
}

type sent struct {
	term, key string
	sale      *ledger.SaleRequest
	refund    *ledger.RefundRequest
	flow      string
	body      string
}

// Random sequences of sales, refunds, batch uploads, replays (same key and
// body, and same key with another body) and spells of degraded mode keep,
// to the cent: stock = initial − sold + refunded per item, Redis's day
// counters = the journal's = the model's, and every answer is the one the
// model predicts (accepted or refused, replayed with the first body).
func TestLedgerProperty(t *testing.T) {
	seed := propertySeed(t)
	t.Logf("seed %d (rerun with -seed %d or POSEDGE_PROPERTY_SEED=%d)", seed, seed, seed)
	rng := rand.New(rand.NewSource(seed))
	e := newEnv(t, journal.Options{})
	const maxCents = 100_000_000_000
	m := &model{initial: map[string]int64{}, sold: map[string]int64{}, refunded: map[string]int64{}, days: map[string]ledger.Totals{}}
	barcodes := []string{"A", "B", "C", "D", "E", "F"}
	for i, b := range barcodes {
		stock := int64(rng.Intn(200))
		e.putItem(b, int64(100*(i+1)), stock)
		m.initial[b] = stock
	}
	prices := []int64{0, 1, 3, 99, 199, 12345, 999_999_999, 40_000_000_000}
	terms := []string{"T01", "T02"}
	degraded := false
	n := 0
	key := func() string { n++; return fmt.Sprintf("k%d", n) }
	stockNow := func(b string) int64 { return m.initial[b] - m.sold[b] + m.refunded[b] }
	count := func(body []byte, kind string, cents int64) {
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
		d := m.days[e.l.Day(at)]
		d.Add(kind, cents)
		m.days[e.l.Day(at)] = d
	}
	randomSale := func() ledger.SaleRequest {
		var s ledger.SaleRequest
		perm := rng.Perm(len(barcodes))[:1+rng.Intn(3)]
		for _, i := range perm {
			l := ledger.Line{Barcode: barcodes[i], Qty: 1 + rng.Int63n(5), PriceCents: prices[rng.Intn(len(prices))]}
			s.Lines = append(s.Lines, l)
			s.TotalCents += l.Qty * l.PriceCents // small enough: ≤ 3 × 5 × 4×10^10
		}
		s.Tender = []string{"cash", "card", "mobile", "other"}[rng.Intn(4)]
		return s
	}
	accept := func(term, key string, s ledger.SaleRequest, r *ledger.Result) {
		ms := modelSale{flow: r.FlowNo, price: map[string]int64{}, left: map[string]int64{}}
		for _, l := range s.Lines {
			m.sold[l.Barcode] += l.Qty
			ms.price[l.Barcode], ms.left[l.Barcode] = l.PriceCents, l.Qty
			ms.barcodeOrder = append(ms.barcodeOrder, l.Barcode)
		}
		m.sales = append(m.sales, ms)
		s2 := s
		m.done = append(m.done, sent{term: term, key: key, sale: &s2, flow: r.FlowNo, body: string(r.Body)})
		count(r.Body, "sale", s.TotalCents)
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
			for _, r := range rows {
				fromJournal.Sales += r.Totals.Sales
				fromJournal.SalesCents += r.Totals.SalesCents
				fromJournal.Refunds += r.Totals.Refunds
				fromJournal.RefundCents += r.Totals.RefundCents
			}
			if d.Totals != want || fromJournal != want {
				t.Fatalf("step %d, day %s: redis %+v, journal %+v, model %+v", step, day, d.Totals, fromJournal, want)
			}
		}
	}

	const steps = 400
	for step := 0; step < steps; step++ {
		term := terms[rng.Intn(len(terms))]
		switch op := rng.Intn(100); {
		case op < 35: // a sale at the till
			s := randomSale()
			k := key()
			r, err := e.l.Sale(e.ctx, term, k, s)
			enough := true
			for _, l := range s.Lines {
				enough = enough && stockNow(l.Barcode) >= l.Qty
			}
			switch {
			case s.TotalCents > maxCents:
				if refusal(t, err).Code != "invalid_amount" {
					t.Fatalf("step %d: sale of %d cents: %v", step, s.TotalCents, err)
				}
			case degraded || enough:
				if err != nil {
					t.Fatalf("step %d: sale refused: %v", step, err)
				}
				accept(term, k, s, r)
			default:
				if refusal(t, err).Code != "insufficient_stock" {
					t.Fatalf("step %d: sale beyond stock: %v", step, err)
				}
			}
		case op < 50: // a batch upload of past sales: accepted whatever the stock
			var batch []ledger.BatchSale
			for i := 0; i < 1+rng.Intn(4); i++ {
				s := randomSale()
				s.OccurredAt = time.Now().UTC().Add(-time.Duration(rng.Intn(300)) * time.Second).Format(time.RFC3339)
				batch = append(batch, ledger.BatchSale{Key: key(), Sale: s})
			}
			for i, res := range e.l.Batch(e.ctx, term, batch) {
				s := batch[i].Sale
				if s.TotalCents > maxCents {
					if res.Err == nil || res.Err.Code != "invalid_amount" {
						t.Fatalf("step %d: batch sale of %d cents: %+v", step, s.TotalCents, res)
					}
					continue
				}
				if res.Err != nil || res.Result.Replayed {
					t.Fatalf("step %d: batch sale %d: %+v %v", step, i, res.Result, res.Err)
				}
				accept(term, batch[i].Key, s, res.Result)
			}
		case op < 75: // a refund of part of an earlier sale, sometimes too much
			if len(m.sales) == 0 {
				continue
			}
			ms := &m.sales[rng.Intn(len(m.sales))]
			b := ms.barcodeOrder[rng.Intn(len(ms.barcodeOrder))]
			qty := 1 + rng.Int63n(3)
			req := ledger.RefundRequest{OriginalFlowNo: ms.flow, Lines: []ledger.RefundLine{{Barcode: b, Qty: qty}}, TotalCents: qty * ms.price[b]}
			k := key()
			r, err := e.l.Refund(e.ctx, term, k, req)
			if req.TotalCents > maxCents {
				if refusal(t, err).Code != "invalid_amount" {
					t.Fatalf("step %d: refund of %d cents: %v", step, req.TotalCents, err)
				}
				continue
			}
			if qty > ms.left[b] {
				if refusal(t, err).Code != "refund_exceeds_sale" {
					t.Fatalf("step %d: refund beyond the sale: %v", step, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("step %d: refund refused: %v", step, err)
			}
			ms.left[b] -= qty
			m.refunded[b] += qty
			m.done = append(m.done, sent{term: term, key: k, refund: &req, flow: r.FlowNo, body: string(r.Body)})
			count(r.Body, "refund", req.TotalCents)
		case op < 90: // a retry: the same key and body, or the key reused
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
			case d.sale != nil && d.sale.OccurredAt != "":
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
		default: // Redis is down for a while, then back and repaired
			if !degraded {
				e.l.SetRedisDown(true)
				degraded = true
				continue
			}
			if err := e.l.Repair(e.ctx); err != nil {
				t.Fatalf("step %d: repair: %v", step, err)
			}
			e.l.SetRedisDown(false)
			degraded = false
			check(step)
		}
	}
	if degraded {
		if err := e.l.Repair(e.ctx); err != nil {
			t.Fatal(err)
		}
		e.l.SetRedisDown(false)
	}
	check(steps)
	if st, _ := e.j.Stats(e.ctx); st.Unapplied != 0 || st.Unappliable != 0 {
		t.Fatalf("journal after the run: %+v", st)
	}
	t.Logf("%d accepted transactions, %d items", len(m.done), len(barcodes))
}
