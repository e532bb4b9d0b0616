package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/moneycheck"
	"github.com/posedge/posedge/internal/testenv"
)

func testenvOpts() testenv.StoreOptions { return testenv.StoreOptions{} }

// SaleJSON is a valid one-line sale of item A1.
func SaleJSON() string {
	return `{"lines":[{"barcode":"A1","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash"}`
}

// testSeed is the seed of a randomised test: POSEDGE_SEED when set, else
// the clock; printed so that a failure can be replayed.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("POSEDGE_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (POSEDGE_SEED=%d replays it)", seed, seed)
	return seed
}

// mixItems are the items the realistic mix sells, with their prices and
// stock. MXS is scarce: five units that every till's live sales race for
// (a third of them carry one), so selling out under faults is audited —
// normal-mode sales refused 409 insufficient_stock, never below zero
// (moneycheck), refunds putting units back for the next race.
var mixItems = []struct {
	barcode string
	price   int64
	stock   int64
}{{"MX1", 100, plenty}, {"MX2", 250, plenty}, {"MX3", 399, plenty}, {"MX4", 1, plenty}, {scarceItem, 500, 5}}

// scarceItem is the mix's item with little stock.
const scarceItem = "MXS"

var tenders = []string{"cash", "card", "mobile", "other"}

// putMixItems stocks the mix's items.
func putMixItems(s *testenv.Store) {
	for _, it := range mixItems {
		s.PutItem(it.barcode, it.price, it.stock)
	}
}

// mixLine is one line of a transaction a till was told of.
type mixLine struct {
	Barcode    string `json:"barcode"`
	Qty        int64  `json:"qty"`
	PriceCents int64  `json:"price_cents"`
}

// mixTxn is a sale or refund a till was answered 2xx for: the answer's
// own fields, which the audit holds every other record against.
type mixTxn struct {
	how            string // sale | token | batch | refund: the path it took
	term, key      string
	FlowNo         string              `json:"flow_no"`
	TerminalID     string              `json:"terminal_id"`
	Kind           string              `json:"kind"`
	TotalCents     int64               `json:"total_cents"`
	Tender         string              `json:"tender"`
	Lines          []mixLine           `json:"lines"`
	OriginalFlowNo string              `json:"original_flow_no"`
	OccurredAt     time.Time           `json:"occurred_at"`
	hist           *moneycheck.History // every request and answer of its tills
}

// mixTills are tills selling a realistic mix until stopped: multi-line
// sales with random tenders and discounts, sales keyed by a payment token,
// refunds of the till's earlier sales and batch uploads of sales made
// "offline". Like real tills each retries an unanswered or failed request
// with the same key and body until it gets an answer it can act on; a
// refusal other than "in progress", "rate limited" or a 5xx fails the
// test. A till finishes the transaction in hand before it stops.
type mixTills struct {
	mu    sync.Mutex
	told  []mixTxn
	count map[string]int // by how
	wg    sync.WaitGroup
	hist  moneycheck.History // every intent and answer, for the checker
	opts  mixOptions
	// lastSale is when a till was last told a sale (UnixNano).
	lastSale atomic.Int64
}

// gaveUp reports whether a till has retried one request for too long.
func (mt *mixTills) gaveUp(attempt int, since time.Time) bool {
	if mt.opts.patience > 0 {
		return time.Since(since) > mt.opts.patience
	}
	return attempt > 600
}

// runMix starts n tills on store s (terminal i%len), keys prefixed by
// prefix, randomised from seed.
func runMix(t *testing.T, ctx context.Context, s *testenv.Store, n int, prefix string, seed uint64) *mixTills {
	return runMixWith(t, ctx, s, n, prefix, seed, mixOptions{})
}

// mixOptions pace the tills of a long test and set how long each waits
// for an answer it can act on.
type mixOptions struct {
	// pause is the mean pause between a till's transactions (0: none).
	pause time.Duration
	// patience is how long a till retries one request before it fails
	// the test (0: 600 attempts).
	patience time.Duration
	// noScarce: no sale takes the scarce item. A split brain's two
	// masters each sell the stock they hold (the cut-off one answers 201
	// on a WAIT shortfall), so there a scarce item can be oversold: a
	// known limit of asynchronous replication (docs/durability.md), not
	// something the checker should fail the rest of the audit on.
	noScarce bool
}

// runMixWith is runMix with options.
func runMixWith(t *testing.T, ctx context.Context, s *testenv.Store, n int, prefix string, seed uint64, o mixOptions) *mixTills {
	mt := &mixTills{count: map[string]int{}, opts: o}
	ctx, stop := context.WithCancel(ctx)
	t.Cleanup(func() { stop(); mt.wg.Wait() })
	for i := 0; i < n; i++ {
		term := s.Terminals[i%len(s.Terminals)]
		rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		mt.wg.Add(1)
		go func() {
			defer mt.wg.Done()
			till := &mixTill{t: t, s: s, term: term, rng: rng, mt: mt}
			for seq := 0; ctx.Err() == nil; seq++ {
				if !till.one(fmt.Sprintf("%s-%s-%d", prefix, term, seq)) {
					return
				}
				if o.pause > 0 {
					time.Sleep(time.Duration(rng.Int64N(2 * int64(o.pause))))
				}
			}
		}()
	}
	return mt
}

// mixUntil runs n tills on store s (as runMix) until they have been told
// of at least atLeast transactions, then stops them and returns what they
// were told: a few more than atLeast, as each till finishes the
// transaction in hand (a batch is up to five).
func mixUntil(t *testing.T, s *testenv.Store, n int, prefix string, seed uint64, atLeast int) ([]mixTxn, *mixTills) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mt := runMix(t, ctx, s, n, prefix, seed)
	testenv.WaitForState(t, 120*time.Second, fmt.Sprintf("the tills to be told of %d transactions", atLeast), func() (bool, string) {
		told := len(mt.snapshot())
		if t.Failed() {
			t.FailNow()
		}
		return told >= atLeast, fmt.Sprintf("%d told", told)
	})
	cancel()
	return mt.wait(), mt
}

func (mt *mixTills) wait() []mixTxn {
	mt.wg.Wait()
	return mt.snapshot()
}

func (mt *mixTills) snapshot() []mixTxn {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	return append([]mixTxn(nil), mt.told...)
}

// summary says how many of each path the tills took.
func (mt *mixTills) summary() string {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	return fmt.Sprintf("%d transactions: %d sales, %d token sales (%d tokens lost by Redis), %d batch sales, %d refunds; %d sales refused for want of %s",
		len(mt.told), mt.count["sale"], mt.count["token"], mt.count["token lost"], mt.count["batch"], mt.count["refund"], mt.count["out of stock"], scarceItem)
}

type mixTill struct {
	t     *testing.T
	s     *testenv.Store
	term  string
	rng   *rand.Rand
	mt    *mixTills
	sales []mixTxn // this till's sales not refunded yet
}

func (m *mixTill) record(tx mixTxn) {
	tx.hist = &m.mt.hist
	m.mt.mu.Lock()
	m.mt.told = append(m.mt.told, tx)
	m.mt.count[tx.how]++
	m.mt.mu.Unlock()
	if tx.Kind == "sale" {
		m.sales = append(m.sales, tx)
		m.mt.lastSale.Store(time.Now().UnixNano())
	}
}

// saleBody is a sale of 1–3 lines, some charged below the list price; a
// live sale (not a batch's: those happened offline whatever the stock)
// starts with one unit of the scarce item a third of the time, first so
// that a refund of the sale's first line puts it back.
func (m *mixTill) saleBody(live bool) map[string]any {
	var lines []map[string]any
	var total int64
	if live && !m.mt.opts.noScarce && m.rng.IntN(3) == 0 {
		it := mixItems[len(mixItems)-1]
		lines = append(lines, map[string]any{"barcode": it.barcode, "qty": int64(1), "price_cents": it.price})
		total += it.price
	}
	for range 1 + m.rng.IntN(3) {
		it := mixItems[m.rng.IntN(len(mixItems)-1)]
		qty := int64(1 + m.rng.IntN(3))
		price := it.price
		if m.rng.IntN(4) == 0 {
			price -= price / 10 // a discount at the till
		}
		lines = append(lines, map[string]any{"barcode": it.barcode, "qty": qty, "price_cents": price})
		total += qty * price
	}
	return map[string]any{"lines": lines, "total_cents": total, "tender": tenders[m.rng.IntN(len(tenders))]}
}

// one makes one transaction; false when the test has failed.
func (m *mixTill) one(key string) bool {
	switch p := m.rng.IntN(100); {
	case p < 20 && len(m.sales) > 0:
		return m.refund(key)
	case p < 35:
		return m.tokenSale(key)
	case p < 45:
		return m.batch(key)
	default:
		return m.sale("sale", key, m.saleBody(true))
	}
}

// history records one attempt of a sale or refund as intent and answer
// (a batch: one op per sale of it).
func (m *mixTill) history(what, key string, body any, r testenv.Resp) {
	status := r.Status
	if r.Err != nil {
		status = 0
	}
	b, _ := body.(map[string]any)
	switch what {
	case "sale", "token", "refund":
		op := intentOp(m.term, what, key, b)
		op.Status, op.Body, op.At = status, r.Body, time.Now()
		m.mt.hist.Add(op)
	case "batch":
		sales, _ := b["sales"].([]map[string]any)
		var res struct {
			Results []struct {
				Status int             `json:"status"`
				Sale   json.RawMessage `json:"sale"`
			} `json:"results"`
		}
		if status == 200 {
			_ = json.Unmarshal(r.Body, &res) // a body the till cannot read is checked by batch
		}
		for i, sb := range sales {
			op := intentOp(m.term, "sale", sb["idempotency_key"].(string), sb)
			op.Status, op.At, op.Batch = status, time.Now(), true
			if status == 200 && i < len(res.Results) {
				op.Status, op.Body = res.Results[i].Status, res.Results[i].Sale
			}
			m.mt.hist.Add(op)
		}
	}
}

// intentOp is the checker's view of a request body the till sent.
func intentOp(term, what, key string, b map[string]any) moneycheck.Op {
	op := moneycheck.Op{Terminal: term, Kind: "sale", Key: key}
	if what == "refund" {
		op.Kind = "refund"
		op.Original, _ = b["original_flow_no"].(string)
	}
	op.Tender, _ = b["tender"].(string)
	op.TotalCents, _ = b["total_cents"].(int64)
	if at, ok := b["occurred_at"].(string); ok {
		op.OccurredAt, _ = time.Parse(time.RFC3339, at)
	}
	lines, _ := b["lines"].([]map[string]any)
	for _, l := range lines {
		ln := moneycheck.Line{}
		ln.Barcode, _ = l["barcode"].(string)
		ln.Qty, _ = l["qty"].(int64)
		ln.PriceCents, _ = l["price_cents"].(int64)
		op.Lines = append(op.Lines, ln)
	}
	return op
}

// send retries one request until it is answered with want (or a code
// nothing can be done about, which fails the test).
func (m *mixTill) send(what, method, path, key string, body any, want int) (testenv.Resp, bool) {
	var hdr map[string]string
	if key != "" {
		hdr = map[string]string{"Idempotency-Key": key}
	}
	since := time.Now()
	for attempt := 0; ; attempt++ {
		r := m.s.T(m.term, method, path, body, hdr)
		m.history(what, key, body, r)
		if r.Err == nil && r.Status == want {
			return r, true
		}
		if what == "token" && r.Status == 400 && r.Code() == "token_invalid" {
			return r, false // a token Redis lost (a failover, a power cut): the caller decides
		}
		if r.Err == nil && r.Status == 409 && r.Code() == "insufficient_stock" && hasScarce(body) {
			return r, false // sold out: the caller sells the rest
		}
		if r.Err == nil && r.Status != 409 && r.Status < 500 && r.Status != 429 {
			m.t.Errorf("%s %s key %s: %d %s", m.term, what, key, r.Status, r.Body)
			return r, false
		}
		if r.Err == nil && r.Status == 409 && r.Code() != "request_in_progress" {
			m.t.Errorf("%s %s key %s: %d %s", m.term, what, key, r.Status, r.Body)
			return r, false
		}
		if m.mt.gaveUp(attempt, since) {
			m.t.Errorf("%s %s key %s never answered (%v): %d %s %v", m.term, what, key, time.Since(since).Round(time.Millisecond), r.Status, r.Body, r.Err)
			return r, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (m *mixTill) sale(how, key string, body map[string]any) bool {
	r, ok := m.send(how, "POST", "/v1/sales", key, body, 201)
	if !ok && r.Code() == "insufficient_stock" {
		return m.soldOut(key, body)
	}
	if !ok {
		return false
	}
	return m.recordSale(how, key, r)
}

// soldOut: the scarce item ran out (409 insufficient_stock, nothing
// charged); like a cashier, the till takes it off the sale and sells the
// rest under a new key.
func (m *mixTill) soldOut(key string, body map[string]any) bool {
	m.mt.mu.Lock()
	m.mt.count["out of stock"]++
	m.mt.mu.Unlock()
	var rest []map[string]any
	var total int64
	for _, l := range body["lines"].([]map[string]any) {
		if l["barcode"] != scarceItem {
			rest = append(rest, l)
			total += l["qty"].(int64) * l["price_cents"].(int64)
		}
	}
	if len(rest) == 0 {
		return true
	}
	return m.sale("sale", key+".rest", map[string]any{"lines": rest, "total_cents": total, "tender": body["tender"]})
}

// hasScarce reports whether a request body sells the scarce item.
func hasScarce(body any) bool {
	b, _ := body.(map[string]any)
	lines, _ := b["lines"].([]map[string]any)
	for _, l := range lines {
		if l["barcode"] == scarceItem {
			return true
		}
	}
	return false
}

// recordSale records the 201 answer r of a sale under key.
func (m *mixTill) recordSale(how, key string, r testenv.Resp) bool {
	var tx mixTxn
	if err := json.Unmarshal(r.Body, &tx); err != nil || tx.FlowNo == "" {
		m.t.Errorf("%s sale key %s answered %s (%v)", m.term, key, r.Body, err)
		return false
	}
	tx.how, tx.term, tx.key = how, m.term, key
	m.record(tx)
	return true
}

// tokenSale keys a sale by a payment token; without Redis there are no
// tokens (503), and the till keys the sale itself, as tills do.
func (m *mixTill) tokenSale(key string) bool {
	r := m.s.T(m.term, "POST", "/v1/payment-tokens", nil, nil)
	if r.Err == nil && r.Status == 201 {
		tok, _ := r.JSON()["token"].(string)
		return m.tokenKeyed(tok, key, m.saleBody(true))
	}
	return m.sale("sale", key, m.saleBody(true))
}

// tokenKeyed sells under token tok; if Redis lost the token (400
// token_invalid: nothing was charged) the till sells under its own key.
func (m *mixTill) tokenKeyed(tok, key string, body map[string]any) bool {
	r, ok := m.send("token", "POST", "/v1/sales", tok, body, 201)
	if !ok && r.Code() == "token_invalid" {
		m.mt.mu.Lock()
		m.mt.count["token lost"]++
		m.mt.mu.Unlock()
		return m.sale("sale", key, body)
	}
	if !ok && r.Code() == "insufficient_stock" {
		return m.soldOut(key, body)
	}
	if !ok {
		return false
	}
	return m.recordSale("token", tok, r)
}

// refund returns one unit of the first line of one of the till's sales.
func (m *mixTill) refund(key string) bool {
	i := m.rng.IntN(len(m.sales))
	orig := m.sales[i]
	m.sales = append(m.sales[:i], m.sales[i+1:]...)
	return m.refundOf(key, orig)
}

// refundOf refunds one unit of the first line of sale orig.
func (m *mixTill) refundOf(key string, orig mixTxn) bool {
	// Refunded units of a barcode are taken from the original's lines in
	// their order (docs/design.md "Refunds"), so the first unit
	// refunded of a sale not refunded before is priced at the first line
	// carrying the barcode: Lines[0] itself.
	barcode, price := orig.Lines[0].Barcode, orig.Lines[0].PriceCents
	body := map[string]any{"original_flow_no": orig.FlowNo,
		"lines": []map[string]any{{"barcode": barcode, "qty": int64(1)}}, "total_cents": price}
	r, ok := m.send("refund", "POST", "/v1/refunds", key, body, 201)
	if !ok {
		return false
	}
	var tx mixTxn
	if err := json.Unmarshal(r.Body, &tx); err != nil || tx.FlowNo == "" || tx.Kind != "refund" {
		m.t.Errorf("%s refund key %s answered %s (%v)", m.term, key, r.Body, err)
		return false
	}
	tx.how, tx.term, tx.key = "refund", m.term, key
	m.record(tx)
	return true
}

// batch uploads 2–5 sales the till made "offline" up to 70 minutes ago
// (so they count in an earlier hour), on today's date.
func (m *mixTill) batch(key string) bool {
	var sales []map[string]any
	now := time.Now().UTC()
	ago := time.Duration(m.rng.IntN(70*60)) * time.Second
	if midnight := now.Truncate(24 * time.Hour); now.Add(-ago).Before(midnight.Add(time.Minute)) {
		ago = 3 * time.Second
	}
	at := now.Add(-ago).Format(time.RFC3339)
	for i := range 2 + m.rng.IntN(4) {
		b := m.saleBody(false)
		b["idempotency_key"] = fmt.Sprintf("%s.b%d", key, i)
		b["occurred_at"] = at
		sales = append(sales, b)
	}
	// A sale of the batch refused for a passing reason (journal or Redis
	// unavailable, in progress) is sent again with the whole batch, as a
	// till would: those already taken answer as replays.
	since := time.Now()
	for attempt := 0; ; attempt++ {
		r, ok := m.send("batch", "POST", "/v1/sales/batch", "", map[string]any{"sales": sales}, 200)
		if !ok {
			return false
		}
		var res struct {
			Results []struct {
				Status int             `json:"status"`
				Sale   json.RawMessage `json:"sale"`
				Error  json.RawMessage `json:"error"`
			} `json:"results"`
		}
		if err := json.Unmarshal(r.Body, &res); err != nil || len(res.Results) != len(sales) {
			m.t.Errorf("%s batch %s answered %s (%v)", m.term, key, r.Body, err)
			return false
		}
		again := false
		for i, x := range res.Results {
			switch {
			case x.Status == 201:
			case x.Status >= 500 || x.Status == 409 || x.Status == 429:
				again = true
			default:
				m.t.Errorf("%s batch %s sale %d: %d %s", m.term, key, i, x.Status, x.Error)
				return false
			}
		}
		if again {
			if m.mt.gaveUp(attempt, since) {
				m.t.Errorf("%s batch %s never fully taken: %s", m.term, key, r.Body)
				return false
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for i, x := range res.Results {
			var tx mixTxn
			if err := json.Unmarshal(x.Sale, &tx); err != nil || tx.FlowNo == "" {
				m.t.Errorf("%s batch %s sale %d: %s (%v)", m.term, key, i, x.Sale, err)
				return false
			}
			tx.how, tx.term, tx.key = "batch", m.term, sales[i]["idempotency_key"].(string)
			m.record(tx)
		}
		return true
	}
}

// counts are the four figures of a stats cell.
type counts struct {
	Sales       int64 `json:"sales"`
	SalesCents  int64 `json:"sales_cents"`
	Refunds     int64 `json:"refunds"`
	RefundCents int64 `json:"refund_cents"`
}

func (c *counts) add(tx mixTxn) {
	if tx.Kind == "refund" {
		c.Refunds++
		c.RefundCents += tx.TotalCents
	} else {
		c.Sales++
		c.SalesCents += tx.TotalCents
	}
}

// expected is what Redis must hold after the transactions told.
type expected struct {
	stock     map[string]int64
	terminals map[string]counts
	tenders   map[string]counts
	totals    counts
	hours     map[string]counts
	net       int64
}

func expect(told []mixTxn, loc *time.Location) expected {
	e := expected{stock: map[string]int64{}, terminals: map[string]counts{}, tenders: map[string]counts{}, hours: map[string]counts{}}
	for _, it := range mixItems {
		e.stock[it.barcode] = it.stock
	}
	for _, tx := range told {
		sign := int64(-1)
		if tx.Kind == "refund" {
			sign = 1
			e.net -= tx.TotalCents
		} else {
			e.net += tx.TotalCents
		}
		for _, ln := range tx.Lines {
			e.stock[ln.Barcode] += sign * ln.Qty
		}
		c := e.terminals[tx.TerminalID]
		c.add(tx)
		e.terminals[tx.TerminalID] = c
		c = e.tenders[tx.Tender]
		c.add(tx)
		e.tenders[tx.Tender] = c
		h := tx.OccurredAt.In(loc).Format("15")
		c = e.hours[h]
		c.add(tx)
		e.hours[h] = c
		e.totals.add(tx)
	}
	return e
}

// auditMix proves the money of a fault test adds up everywhere: every
// transaction a till was told of (every 2xx) is in exactly one of the
// journals (one per daemon given), its row the till's sale (terminal,
// key, kind, tender, total, original), and nothing else is; HQ holds each,
// nothing else, with the same net cents, and its conflicts table is empty
// (a flow number issued twice lands there); Redis's stock of every item and the
// daily counters per terminal and per tender and the hourly ones are
// exactly what the tills were told. HQ and Redis are polled (replay and
// degraded-mode apply take time); the failure names the last state seen.
func auditMix(t *testing.T, s *testenv.Store, told []mixTxn, journals ...string) {
	t.Helper()
	if len(told) == 0 {
		t.Fatal("no transaction was answered at all")
	}
	if len(journals) == 0 {
		journals = []string{filepath.Join(s.Dir, "journal.db")}
	}
	want := map[string]mixTxn{}
	for _, tx := range told {
		if prev, dup := want[tx.FlowNo]; dup {
			t.Fatalf("flow number %s answered twice: %s key %s and %s key %s", tx.FlowNo, prev.term, prev.key, tx.term, tx.key)
		}
		want[tx.FlowNo] = tx
	}

	// Each journal's row of a flow number is the transaction the till was
	// told under it (its terminal, key, kind, tender, total, original):
	// a number reused for another sale, or a row lost, shows here. A
	// journal's flow_no is its primary key, so "once" is only asked across
	// the journals of several daemons.
	jr := map[string]journalRow{}
	in := map[string][]string{}
	for _, path := range journals {
		for f, row := range journalRows(t, path) {
			jr[f] = row
			in[f] = append(in[f], filepath.Base(filepath.Dir(path)))
		}
	}
	for f, tx := range want {
		row, ok := jr[f]
		switch {
		case !ok:
			t.Errorf("no journal holds %s (%s %s key %s)", f, tx.how, tx.term, tx.key)
		case len(in[f]) > 1:
			t.Errorf("%s (%s %s key %s) is in %d journals: %v", f, tx.how, tx.term, tx.key, len(in[f]), in[f])
		case row != (journalRow{tx.term, tx.key, tx.Kind, tx.Tender, tx.TotalCents, tx.OriginalFlowNo}):
			t.Errorf("journal row of %s is %+v, the till was told %s %s key %s %s %d cents (original %q)",
				f, row, tx.Kind, tx.term, tx.key, tx.Tender, tx.TotalCents, tx.OriginalFlowNo)
		}
	}
	for f, row := range jr {
		if _, ok := want[f]; !ok {
			t.Errorf("journal holds %s (%+v), which no till was told of", f, row)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	e := expect(told, time.UTC)
	testenv.WaitForState(t, 90*time.Second, "HQ to hold every transaction told, once", func() (bool, string) {
		hq, net := s.HQRows()
		missing := 0
		for f := range want {
			if hq[f] == 0 {
				missing++
			}
		}
		last := fmt.Sprintf("HQ holds %d rows, %d of %d told missing, net %d cents (want %d)", len(hq), missing, len(want), net, e.net)
		if missing > 0 {
			return false, last
		}
		// Bodies are compared with what each till was told by moneycheck
		// (checkHistory); here: nothing at HQ that no till was told.
		for f := range hq {
			if _, ok := want[f]; !ok {
				t.Fatalf("HQ holds %s, which no till was told of", f)
			}
		}
		if net != e.net || len(hq) != len(want) {
			t.Fatalf("HQ: %s", last)
		}
		return true, last
	})
	if n := s.HQConflicts(); n != 0 {
		t.Fatalf("HQ's conflicts table holds %d rows: a flow number was issued twice", n)
	}

	day := time.Now().UTC().Format("20060102")
	testenv.WaitForState(t, 60*time.Second, "Redis's stock and counters to match what the tills were told", func() (bool, string) {
		d := redisDiff(s, e, day)
		return d == "", d
	})
	checkHistory(t, s, told, day)
}

// checkHistory runs the money checker over every request the tills of
// told made and every answer they got, against HQ's rows, Redis's stock and
// the daemon's daily stats read now: the oracle is the tills' intents, not
// the daemon's answers.
func checkHistory(t *testing.T, s *testenv.Store, told []mixTxn, day string) {
	t.Helper()
	seen := map[*moneycheck.History]bool{}
	var ops []moneycheck.Op
	for _, tx := range told {
		if tx.hist == nil {
			t.Logf("moneycheck: skipped, %s key %s was not made by a mix till", tx.FlowNo, tx.key)
			return
		}
		if !seen[tx.hist] {
			seen[tx.hist] = true
			ops = append(ops, tx.hist.Ops()...)
		}
	}
	w := moneycheck.World{InitialStock: map[string]int64{}, FinalStock: map[string]int64{}, HQ: s.HQBodies()}
	for _, it := range mixItems {
		w.InitialStock[it.barcode] = it.stock
		r := s.T(s.Terminals[0], "GET", "/v1/items/"+it.barcode, nil, nil)
		w.FinalStock[it.barcode] = num(r.JSON()["stock"])
	}
	var daily struct {
		Terminals map[string]moneycheck.Counters `json:"terminals"`
		Tenders   map[string]moneycheck.Counters `json:"tenders"`
		Totals    moneycheck.Counters            `json:"totals"`
	}
	r := s.Admin("GET", "/admin/v1/stats/daily?date="+day, nil)
	if err := json.Unmarshal(r.Body, &daily); r.Status != 200 || err != nil {
		t.Fatalf("daily stats: %d %s", r.Status, r.Body)
	}
	w.Terminals, w.Tenders, w.Totals = daily.Terminals, daily.Tenders, &daily.Totals
	var hourly struct {
		Hours map[string]moneycheck.Counters `json:"hours"`
	}
	r = s.Admin("GET", "/admin/v1/stats/hourly?date="+day, nil)
	if err := json.Unmarshal(r.Body, &hourly); r.Status != 200 || err != nil {
		t.Fatalf("hourly stats: %d %s", r.Status, r.Body)
	}
	w.Hours, w.Location = hourly.Hours, time.UTC
	rep, err := moneycheck.Check(ops, w)
	t.Log(rep)
	if err != nil {
		t.Fatalf("moneycheck: %v", err)
	}
}

// redisDiff is "" when Redis holds the stock and counters e, else the
// first difference.
func redisDiff(s *testenv.Store, e expected, day string) string {
	for _, it := range mixItems {
		r := s.T(s.Terminals[0], "GET", "/v1/items/"+it.barcode, nil, nil)
		if r.Status != 200 || r.JSON()["stale"] != false || num(r.JSON()["stock"]) != e.stock[it.barcode] {
			return fmt.Sprintf("item %s: %d %s, want stock %d", it.barcode, r.Status, r.Body, e.stock[it.barcode])
		}
	}
	var daily struct {
		Terminals map[string]counts `json:"terminals"`
		Totals    counts            `json:"totals"`
		Tenders   map[string]counts `json:"tenders"`
	}
	r := s.Admin("GET", "/admin/v1/stats/daily?date="+day, nil)
	if err := json.Unmarshal(r.Body, &daily); r.Status != 200 || err != nil {
		return fmt.Sprintf("daily stats: %d %s", r.Status, r.Body)
	}
	if daily.Totals != e.totals {
		return fmt.Sprintf("daily totals %+v, want %+v", daily.Totals, e.totals)
	}
	if d := cellsDiff("terminal", daily.Terminals, e.terminals); d != "" {
		return d
	}
	if d := cellsDiff("tender", daily.Tenders, e.tenders); d != "" {
		return d
	}
	var hourly struct {
		Hours map[string]counts `json:"hours"`
	}
	r = s.Admin("GET", "/admin/v1/stats/hourly?date="+day, nil)
	if err := json.Unmarshal(r.Body, &hourly); r.Status != 200 || err != nil {
		return fmt.Sprintf("hourly stats: %d %s", r.Status, r.Body)
	}
	return cellsDiff("hour", hourly.Hours, e.hours)
}

func cellsDiff(what string, got, want map[string]counts) string {
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		if got[k] != want[k] {
			return fmt.Sprintf("%s %s: %+v, want %+v", what, k, got[k], want[k])
		}
	}
	return ""
}

// journalRow is what a journal holds of a transaction that a till can
// hold it against.
type journalRow struct {
	term, key, kind, tender string
	total                   int64
	original                string
}

// journalRows reads every transaction of a journal file (read-only,
// beside its daemon) by flow number.
func journalRows(t *testing.T, path string) map[string]journalRow {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT flow_no, terminal_id, idem_key, kind, tender, total_cents, original_flow_no FROM txns`)
	if err != nil {
		t.Fatalf("read journal %s: %v", path, err)
	}
	defer rows.Close()
	out := map[string]journalRow{}
	for rows.Next() {
		var f string
		var r journalRow
		if err := rows.Scan(&f, &r.term, &r.key, &r.kind, &r.tender, &r.total, &r.original); err != nil {
			t.Fatal(err)
		}
		out[f] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read journal %s: %v", path, err)
	}
	return out
}

// journalTxns reads every flow number of a journal file (read-only,
// beside its daemon) with its count.
func journalTxns(t *testing.T, path string) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT flow_no FROM txns`)
	if err != nil {
		t.Fatalf("read journal %s: %v", path, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		out[f]++
	}
	return out
}

// looseMix are limits no realistic mix of four tills reaches.
var looseMix = strings.Join([]string{
	`  store:    {limit: 100000, window: "1s"}`,
	`  terminal: {limit: 100000, window: "1s"}`,
	`  actions:`,
	`    pay:    {limit: 100000, window: "1s"}`,
	`    scan:   {limit: 100000, window: "1s"}`,
	`    refund: {limit: 100000, window: "1s"}`,
	`    sync:   {limit: 100000, window: "1s"}`,
	`  terminal_bytes: {limit: 1073741824, window: "1h"}`,
}, "\n") + "\n"
