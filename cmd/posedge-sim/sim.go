package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/posedge/posedge/clients/tillclient"
	"github.com/posedge/posedge/internal/moneycheck"
)

// Config is one simulation run.
type Config struct {
	URL, AdminURL, AdminToken string
	Terminals                 []Terminal
	Duration                  time.Duration // how long new sales are started
	SeedItems                 int           // demo items to PUT first
	Barcodes                  []string      // what to sell; default the demo items
	Rate                      float64       // sales per second per terminal
	ReplayFraction            float64       // sales sent twice on purpose
	MinScans, MaxScans        int           // items scanned (and sold) per sale; default 1-4
	TokenFraction             float64       // sales keyed by a payment token from /v1/payment-tokens
	RefundFraction            float64       // sales refunded (one unit of their first line) right after
	BatchEvery                time.Duration // an offline till uploads a batch this often (0: never)
	BatchSize                 int           // sales per batch upload, default 20
	// Scarce items are PUT with ScarceStock units each (default 5), and a
	// third of the sales carry one unit of one of them, so the terminals
	// race for the last units: a sale refused 409 insufficient_stock is
	// counted as sold out, not as an error, and moneycheck (with
	// `posedge-sim check --stock`) holds each refusal and the stock
	// against the history.
	ScarceItems int
	ScarceStock int64
	UserAgent   string
	// SaleTimeout bounds one sale with all its retries; a sale running
	// when Duration ends may finish within it. Default 10s.
	SaleTimeout time.Duration
	Client      *http.Client
	// History, when set, records every sale, refund and batch sale as
	// intent and final answer, for internal/moneycheck (--history).
	History *moneycheck.History
}

// Terminal is one simulated till.
type Terminal struct{ ID, Key string }

// Summary counts what happened.
type Summary struct {
	Terminals      int
	Elapsed        time.Duration
	Sales          int   // distinct flow numbers answered 201
	TotalCents     int64 // of those sales
	Replays        int   // replays on purpose answered with the same sale
	ReplayMismatch int   // replays answered with anything else (a bug)
	RateLimited    int   // 429 answers (each waited Retry-After, then retried)
	Retries        int   // network errors, 5xx, request_in_progress: retried with the same key
	Scans          int
	TokenSales     int            // sales keyed by a payment token
	SoldOut        int            // sales refused 409 insufficient_stock (a scarce item ran out)
	Refunds        int            // refunds answered 201
	BatchSales     int            // batch-uploaded sales answered 201 in their result
	Errors         map[string]int // requests given up, by error code
	// Latency and Status are every answered request's, by route
	// ("GET /v1/items/{barcode}"); Status counts "route status".
	Latency map[string][]time.Duration
	Status  map[string]int
}

func (s *Summary) add(o Summary) {
	s.Sales += o.Sales
	s.TotalCents += o.TotalCents
	s.Replays += o.Replays
	s.ReplayMismatch += o.ReplayMismatch
	s.RateLimited += o.RateLimited
	s.Retries += o.Retries
	s.Scans += o.Scans
	s.TokenSales += o.TokenSales
	s.SoldOut += o.SoldOut
	s.Refunds += o.Refunds
	s.BatchSales += o.BatchSales
	for k, v := range o.Errors {
		s.Errors[k] += v
	}
	if s.Latency == nil {
		s.Latency, s.Status = map[string][]time.Duration{}, map[string]int{}
	}
	for k, v := range o.Latency {
		s.Latency[k] = append(s.Latency[k], v...)
	}
	for k, v := range o.Status {
		s.Status[k] += v
	}
}

// Print writes the summary for people (the demo reads the "sales ok" line).
func (s Summary) Print(w io.Writer) {
	nerr := 0
	codes := make([]string, 0, len(s.Errors))
	for k, v := range s.Errors {
		nerr += v
		codes = append(codes, k)
	}
	sort.Strings(codes)
	fmt.Fprintf(w, "posedge-sim: %d terminals, %s\n", s.Terminals, s.Elapsed.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  sales ok      %6d  (distinct flow numbers)\n", s.Sales)
	fmt.Fprintf(w, "  total cents   %6d\n", s.TotalCents)
	fmt.Fprintf(w, "  replays       %6d  (same key sent again on purpose: same sale back)\n", s.Replays)
	if s.ReplayMismatch > 0 {
		fmt.Fprintf(w, "  BAD replays   %6d  (a replay answered differently)\n", s.ReplayMismatch)
	}
	fmt.Fprintf(w, "  rate limited  %6d  (429, waited Retry-After)\n", s.RateLimited)
	fmt.Fprintf(w, "  retries       %6d  (network error, 5xx or in progress: same Idempotency-Key)\n", s.Retries)
	fmt.Fprintf(w, "  scans         %6d\n", s.Scans)
	fmt.Fprintf(w, "  token sales   %6d  (keyed by a payment token)\n", s.TokenSales)
	if s.SoldOut > 0 {
		fmt.Fprintf(w, "  sold out      %6d  (409 insufficient_stock: a scarce item ran out)\n", s.SoldOut)
	}
	fmt.Fprintf(w, "  refunds       %6d\n", s.Refunds)
	fmt.Fprintf(w, "  batch sales   %6d  (uploaded by an offline till)\n", s.BatchSales)
	fmt.Fprintf(w, "  errors        %6d\n", nerr)
	for _, k := range codes {
		fmt.Fprintf(w, "    %-24s %d\n", k, s.Errors[k])
	}
	routes := make([]string, 0, len(s.Latency))
	for r := range s.Latency {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	statuses := make([]string, 0, len(s.Status))
	for k := range s.Status {
		statuses = append(statuses, k)
	}
	sort.Strings(statuses)
	for _, r := range routes {
		lat := slices.Clone(s.Latency[r])
		slices.Sort(lat)
		q := func(p float64) float64 {
			return float64(lat[min(len(lat)-1, int(float64(len(lat))*p))]) / float64(time.Millisecond)
		}
		var byStatus []string
		for _, k := range statuses {
			if st, ok := strings.CutPrefix(k, r+" "); ok {
				byStatus = append(byStatus, fmt.Sprintf("%s:%d", st, s.Status[k]))
			}
		}
		fmt.Fprintf(w, "  latency %-28s n=%-6d p50=%.2fms p90=%.2fms p99=%.2fms max=%.2fms status %s\n",
			r, len(lat), q(0.5), q(0.9), q(0.99), q(1), strings.Join(byStatus, " "))
	}
}

// DemoBarcode is the barcode of demo item i (1-based), EAN-13 sized.
func DemoBarcode(i int) string { return fmt.Sprintf("2000000%06d", i) }

// ScarceBarcode is the barcode of scarce item i (1-based).
func ScarceBarcode(i int) string { return fmt.Sprintf("2999999%06d", i) }

// SeededStock is what `posedge-sim check --stock` needs to know of a run:
// the stock it PUT for each item it seeded (a refused sale is judged only
// when every item of it has a known initial stock).
func SeededStock(c Config) map[string]int64 {
	out := map[string]int64{}
	for i := 1; i <= c.SeedItems; i++ {
		out[DemoBarcode(i)] = demoStock
	}
	for i := 1; i <= c.ScarceItems; i++ {
		out[ScarceBarcode(i)] = c.ScarceStock
	}
	return out
}

// demoStock is the stock of every seeded demo item.
const demoStock = 1_000_000

// Run seeds the demo items if asked, then runs every terminal until
// c.Duration has passed or ctx is cancelled, and lets sales in flight
// finish.
func Run(ctx context.Context, c Config, log io.Writer) (Summary, error) {
	if c.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 4 * len(c.Terminals)
		c.Client = &http.Client{Timeout: 5 * time.Second, Transport: tr}
	}
	if c.SaleTimeout == 0 {
		c.SaleTimeout = 10 * time.Second
	}
	if c.MinScans <= 0 || c.MaxScans < c.MinScans {
		c.MinScans, c.MaxScans = 1, 4
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 20
	}
	if len(c.Barcodes) == 0 {
		n := c.SeedItems
		if n == 0 {
			n = 20
		}
		for i := 1; i <= n; i++ {
			c.Barcodes = append(c.Barcodes, DemoBarcode(i))
		}
	}
	if c.ScarceItems > 0 && c.ScarceStock <= 0 {
		c.ScarceStock = 5
	}
	if c.SeedItems > 0 || c.ScarceItems > 0 {
		if err := seed(ctx, c); err != nil {
			return Summary{}, err
		}
		fmt.Fprintf(log, "posedge-sim: %d demo items and %d scarce items (stock %d each) put through %s\n", c.SeedItems, c.ScarceItems, c.ScarceStock, c.AdminURL)
	}
	fmt.Fprintf(log, "posedge-sim: %d terminals, %.1f sales/s each, for %s against %s\n",
		len(c.Terminals), c.Rate, c.Duration, c.URL)

	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, c.Duration)
	defer cancel()
	total := Summary{Terminals: len(c.Terminals), Errors: map[string]int{},
		Latency: map[string][]time.Duration{}, Status: map[string]int{}}
	tills := make([]*till, len(c.Terminals))
	for i, t := range c.Terminals {
		tl, err := newTill(c, t)
		if err != nil {
			return Summary{}, err
		}
		tills[i] = tl
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	if c.BatchEvery > 0 {
		up, err := newTill(c, c.Terminals[len(c.Terminals)-1])
		if err != nil {
			return Summary{}, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := up.uploadLoop(runCtx)
			mu.Lock()
			total.add(s)
			mu.Unlock()
		}()
	}
	for _, tl := range tills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := tl.loop(runCtx)
			mu.Lock()
			total.add(s)
			mu.Unlock()
		}()
	}
	wg.Wait()
	total.Elapsed = time.Since(start)
	return total, nil
}

// seed PUTs the demo items with plenty of stock and the scarce ones with
// ScarceStock.
func seed(ctx context.Context, c Config) error {
	cl, err := newClient(c.AdminURL, c.Client, c.AdminToken, c.UserAgent, false)
	if err != nil {
		return err
	}
	type put struct {
		bc   string
		item tillclient.ItemWrite
	}
	var puts []put
	for i := 1; i <= c.SeedItems; i++ {
		puts = append(puts, put{DemoBarcode(i), tillclient.ItemWrite{Name: fmt.Sprintf("Demo item %d", i), PriceCents: int64(99 + (i*337)%1900), Stock: demoStock}})
	}
	for i := 1; i <= c.ScarceItems; i++ {
		puts = append(puts, put{ScarceBarcode(i), tillclient.ItemWrite{Name: fmt.Sprintf("Scarce item %d", i), PriceCents: 999, Stock: c.ScarceStock}})
	}
	for _, p := range puts {
		bc, item := p.bc, p.item
		ictx, cancel := context.WithTimeout(ctx, 15*time.Second)
		r, err := cl.call(ictx, routePutItem, func(ctx context.Context) (*http.Response, error) {
			return cl.api.PutItem(ctx, bc, item)
		})
		cancel()
		if err != nil {
			return fmt.Errorf("seed item %s: %w (is posedge's admin API at %s?)", bc, err, c.AdminURL)
		}
		if r.status/100 != 2 {
			return fmt.Errorf("seed item %s: %d %s", bc, r.status, bytes.TrimSpace(r.body))
		}
	}
	return nil
}

// till is one simulated terminal; it is used by one goroutine only.
type till struct {
	cfg   Config
	id    string
	cl    *client
	sum   Summary
	flows map[string]bool
	seq   int
	tag   string
}

func newTill(c Config, t Terminal) (*till, error) {
	tag := make([]byte, 4)
	for i := range tag {
		tag[i] = byte(rand.UintN(256))
	}
	tl := &till{cfg: c, id: t.ID, flows: map[string]bool{}, tag: hex.EncodeToString(tag)}
	cl, err := newClient(c.URL, c.Client, t.Key, c.UserAgent, true)
	if err != nil {
		return nil, err
	}
	tl.cl = cl
	tl.sum.Errors = map[string]int{}
	return tl, nil
}

// done hands the till's counts over at the end of its loop.
func (t *till) done() Summary {
	t.sum.Retries, t.sum.RateLimited = t.cl.retries, t.cl.limited
	t.sum.Latency, t.sum.Status = t.cl.latency, t.cl.status
	return t.sum
}

func (t *till) loop(ctx context.Context) Summary {
	interval := max(time.Duration(float64(time.Second)/t.cfg.Rate), time.Microsecond)
	next := time.Now().Add(rand.N(interval)) // spread the terminals
	for {
		if sleep(ctx, time.Until(next)) != nil {
			return t.done()
		}
		// A sale started runs to its end even when the run is over:
		// abandoning it would leave its outcome unknown.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.SaleTimeout)
		t.sale(sctx)
		cancel()
		next = next.Add(interval)
		if now := time.Now(); next.Before(now) {
			next = now // never burst to catch up
		}
	}
}

var tenders = []tillclient.Tender{tillclient.TenderCash, tillclient.TenderCard, tillclient.TenderMobile, tillclient.TenderOther}

// sale scans MinScans to MaxScans items back to back (a burst, as a
// till scanning a basket) and pays for them, keyed by a payment token
// for TokenFraction of sales; RefundFraction of sales are then refunded.
func (t *till) sale(ctx context.Context) {
	var b tillclient.SaleRequest
	lo, hi := min(t.cfg.MinScans, len(t.cfg.Barcodes)), min(t.cfg.MaxScans, len(t.cfg.Barcodes))
	scan := make([]string, 0, hi+1)
	if t.cfg.ScarceItems > 0 && rand.IntN(3) == 0 {
		// First, so that the refund of the first line puts a unit back.
		scan = append(scan, ScarceBarcode(1+rand.IntN(t.cfg.ScarceItems)))
	}
	for _, i := range rand.Perm(len(t.cfg.Barcodes))[:lo+rand.IntN(hi-lo+1)] {
		scan = append(scan, t.cfg.Barcodes[i])
	}
	for _, bc := range scan {
		t.sum.Scans++
		r, err := t.cl.call(ctx, routeGetItem, func(ctx context.Context) (*http.Response, error) {
			return t.cl.api.GetItem(ctx, bc)
		})
		if t.failed(r, err, http.StatusOK) {
			return
		}
		var item tillclient.Item
		if err := json.Unmarshal(r.body, &item); err != nil {
			t.sum.Errors["bad_item_json"]++
			return
		}
		price := item.PriceCents
		if rand.IntN(10) == 0 {
			price -= price / 10 // the till gave a discount
		}
		l := tillclient.SaleLine{Barcode: bc, Qty: 1 + rand.Int64N(3), PriceCents: price}
		b.Lines = append(b.Lines, l)
		b.TotalCents += int64(l.Qty) * l.PriceCents
	}
	t.seq++
	b.Tender = tenders[rand.IntN(len(tenders))]
	receipt := fmt.Sprintf("%s-%06d", t.id, t.seq)
	b.ReceiptNo = &receipt
	key := fmt.Sprintf("sim-%s-%s-%d", t.id, t.tag, t.seq)
	token := rand.Float64() < t.cfg.TokenFraction
	if token {
		r, err := t.cl.call(ctx, routePaymentToken, func(ctx context.Context) (*http.Response, error) {
			return t.cl.api.CreatePaymentToken(ctx, tillclient.CreatePaymentTokenJSONRequestBody{})
		})
		if t.failed(r, err, http.StatusCreated) {
			return
		}
		var tk struct {
			Token string `json:"token"`
		}
		if json.Unmarshal(r.body, &tk) != nil || tk.Token == "" {
			t.sum.Errors["bad_token_json"]++
			return
		}
		key = tk.Token
	}

	sell := func(ctx context.Context) (*http.Response, error) {
		return t.cl.api.CreateSale(ctx, &tillclient.CreateSaleParams{IdempotencyKey: key}, b)
	}
	r, err := t.cl.call(ctx, routeSale, sell)
	t.record("sale", key, saleIntent(b), r, err)
	if err == nil && r.status == http.StatusConflict && errorCode(r) == "insufficient_stock" {
		t.sum.SoldOut++ // nothing charged; the customer leaves without it
		return
	}
	if t.failed(r, err, http.StatusCreated) {
		return
	}
	flow := flowNo(r.body)
	if !t.flows[flow] {
		t.flows[flow] = true
		t.sum.Sales++
		t.sum.TotalCents += b.TotalCents
		if token {
			t.sum.TokenSales++
		}
	}
	if rand.Float64() < t.cfg.RefundFraction {
		t.refund(ctx, flow, b.Lines[0])
	}
	if rand.Float64() >= t.cfg.ReplayFraction {
		return
	}
	r2, err := t.cl.call(ctx, routeSale, sell)
	t.record("sale", key, saleIntent(b), r2, err)
	if err == nil && r2.status == http.StatusCreated && flowNo(r2.body) == flow &&
		r2.header.Get("Idempotent-Replayed") == "true" {
		t.sum.Replays++
	} else {
		t.sum.ReplayMismatch++
	}
}

// refund returns one unit of a line of sale flow.
func (t *till) refund(ctx context.Context, flow string, l tillclient.SaleLine) {
	body := tillclient.RefundRequest{OriginalFlowNo: flow,
		Lines: []tillclient.RefundLine{{Barcode: l.Barcode, Qty: 1}}, TotalCents: l.PriceCents}
	t.seq++
	key := fmt.Sprintf("simr-%s-%s-%d", t.id, t.tag, t.seq)
	r, err := t.cl.call(ctx, routeRefund, func(ctx context.Context) (*http.Response, error) {
		return t.cl.api.CreateRefund(ctx, &tillclient.CreateRefundParams{IdempotencyKey: key}, body)
	})
	t.record("refund", key, moneycheck.Op{Lines: []moneycheck.Line{{Barcode: l.Barcode, Qty: 1}},
		TotalCents: l.PriceCents, Original: flow}, r, err)
	if t.failed(r, err, http.StatusCreated) {
		return
	}
	t.sum.Refunds++
}

// uploadLoop is a till that was offline: every BatchEvery it uploads the
// BatchSize sales it made meanwhile in one /v1/sales/batch.
func (t *till) uploadLoop(ctx context.Context) Summary {
	for n := 0; ; n++ {
		if sleep(ctx, t.cfg.BatchEvery) != nil {
			return t.done()
		}
		sales := make([]tillclient.BatchItem, t.cfg.BatchSize)
		at := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		for i := range sales {
			bc := t.cfg.Barcodes[rand.IntN(len(t.cfg.Barcodes))]
			price := int64(100 + rand.IntN(900))
			sales[i] = map[string]any{"idempotency_key": fmt.Sprintf("simb-%s-%s-%d-%d", t.id, t.tag, n, i),
				"lines":       []map[string]any{{"barcode": bc, "qty": 1, "price_cents": price}},
				"total_cents": price, "tender": "cash", "occurred_at": at}
		}
		body := tillclient.BatchRequest{Sales: sales}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.cfg.SaleTimeout)
		r, err := t.cl.call(sctx, routeBatch, func(ctx context.Context) (*http.Response, error) {
			return t.cl.api.UploadSalesBatch(ctx, body)
		})
		cancel()
		if t.failed(r, err, http.StatusOK) {
			continue
		}
		var res struct {
			Results []struct {
				Status int             `json:"status"`
				Sale   json.RawMessage `json:"sale"`
			} `json:"results"`
		}
		if json.Unmarshal(r.body, &res) != nil {
			t.sum.Errors["bad_batch_json"]++
			continue
		}
		t.recordBatch(sales, res.Results)
		for _, x := range res.Results {
			if x.Status == http.StatusCreated {
				t.sum.BatchSales++
			} else {
				t.sum.Errors["batch_"+strconv.Itoa(x.Status)]++
			}
		}
	}
}

// failed counts a request that did not end with want.
func (t *till) failed(r answer, err error, want int) bool {
	switch {
	case err != nil:
		t.sum.Errors["gave_up:"+errKind(err)]++
	case r.status != want:
		t.sum.Errors[errorCode(r)]++
	default:
		return false
	}
	return true
}

func errKind(err error) string {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return "timeout"
	}
	return "network"
}

func flowNo(body []byte) string {
	var s struct {
		FlowNo string `json:"flow_no"`
	}
	json.Unmarshal(body, &s)
	return s.FlowNo
}

// errorCode is the contract's error code of an answer, or http_<status>.
func errorCode(r answer) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(r.body, &e) == nil && e.Error.Code != "" {
		return e.Error.Code
	}
	return "http_" + strconv.Itoa(r.status)
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

// The routes as the contract names them, the keys of Summary's latency
// and status counts.
const (
	routeGetItem      = "GET /v1/items/{barcode}"
	routePaymentToken = "POST /v1/payment-tokens"
	routeSale         = "POST /v1/sales"
	routeRefund       = "POST /v1/refunds"
	routeBatch        = "POST /v1/sales/batch"
	routePutItem      = "PUT /admin/v1/items/{barcode}"
)

// client sends requests as one bearer through the client generated from
// docs/openapi.yaml (clients/tillclient) and retries as a till should.
type client struct {
	api     *tillclient.Client
	retries int // network errors, 5xx, request_in_progress
	limited int // 429 answers
	latency map[string][]time.Duration
	status  map[string]int
}

// newClient is a client of the API at server (the terminal or the admin
// listener) as bearer, measuring each route's latency when measure.
func newClient(server string, hc *http.Client, bearer, userAgent string, measure bool) (*client, error) {
	api, err := tillclient.NewClient(server, tillclient.WithHTTPClient(hc),
		tillclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			req.Header.Set("User-Agent", userAgent)
			return nil
		}))
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", server, err)
	}
	cl := &client{api: api}
	if measure {
		cl.latency, cl.status = map[string][]time.Duration{}, map[string]int{}
	}
	return cl, nil
}

// call sends one request (send, which makes it through the generated
// client) until it gets an answer to keep: network errors, 5xx and 409
// request_in_progress are retried with the very same request (same body,
// same Idempotency-Key, so a sale is never made twice); a 429 waits
// Retry-After first. It gives up only when ctx ends.
func (cl *client) call(ctx context.Context, rt string, send func(context.Context) (*http.Response, error)) (answer, error) {
	backoff := 100 * time.Millisecond
	for {
		r, err := cl.once(ctx, rt, send)
		var wait time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			return r, err
		case err != nil:
			cl.retries++
			wait = backoff
		case r.status == http.StatusTooManyRequests:
			cl.limited++
			wait = retryAfter(r.header, time.Second)
		case r.status >= 500 || (r.status == http.StatusConflict && errorCode(r) == "request_in_progress"):
			cl.retries++
			wait = retryAfter(r.header, backoff)
		default:
			return r, nil
		}
		if serr := sleep(ctx, wait); serr != nil {
			if err == nil {
				err = serr
			}
			return r, err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (cl *client) once(ctx context.Context, rt string, send func(context.Context) (*http.Response, error)) (answer, error) {
	start := time.Now()
	res, err := send(ctx)
	if err != nil {
		return answer{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return answer{}, err
	}
	if cl.latency != nil {
		cl.latency[rt] = append(cl.latency[rt], time.Since(start))
		cl.status[rt+" "+strconv.Itoa(res.StatusCode)]++
	}
	return answer{status: res.StatusCode, header: res.Header, body: b}, nil
}

// retryAfter reads Retry-After in whole seconds, else def.
func retryAfter(h http.Header, def time.Duration) time.Duration {
	if n, err := strconv.Atoi(h.Get("Retry-After")); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return def
}

// sleep waits d or until ctx ends (then it returns ctx.Err()).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// saleIntent is a sale request as the history checker sees it.
func saleIntent(b tillclient.SaleRequest) moneycheck.Op {
	op := moneycheck.Op{TotalCents: b.TotalCents, Tender: string(b.Tender)}
	for _, l := range b.Lines {
		op.Lines = append(op.Lines, moneycheck.Line{Barcode: l.Barcode, Qty: int64(l.Qty), PriceCents: l.PriceCents})
	}
	return op
}

// record adds one request's intent and final answer to the history (no
// answer: status 0, indeterminate).
func (t *till) record(kind, key string, op moneycheck.Op, r answer, err error) {
	if t.cfg.History == nil {
		return
	}
	op.Terminal, op.Kind, op.Key, op.At = t.id, kind, key, time.Now()
	if err == nil {
		op.Status, op.Body = r.status, r.body
	}
	t.cfg.History.Add(op)
}

// recordBatch adds each sale of an answered batch with its own result.
func (t *till) recordBatch(sales []tillclient.BatchItem, results []struct {
	Status int             `json:"status"`
	Sale   json.RawMessage `json:"sale"`
}) {
	if t.cfg.History == nil {
		return
	}
	for i, item := range sales {
		sb, _ := item.(map[string]any)
		key, _ := sb["idempotency_key"].(string)
		lines, _ := sb["lines"].([]map[string]any)
		op := moneycheck.Op{Terminal: t.id, Kind: "sale", Key: key, Batch: true, At: time.Now()}
		op.TotalCents, _ = sb["total_cents"].(int64)
		op.Tender, _ = sb["tender"].(string)
		if at, ok := sb["occurred_at"].(string); ok {
			op.OccurredAt, _ = time.Parse(time.RFC3339, at)
		}
		for _, l := range lines {
			bc, _ := l["barcode"].(string)
			qty, _ := l["qty"].(int)
			price, _ := l["price_cents"].(int64)
			op.Lines = append(op.Lines, moneycheck.Line{Barcode: bc, Qty: int64(qty), PriceCents: price})
		}
		if i < len(results) {
			op.Status, op.Body = results[i].Status, results[i].Sale
		}
		t.cfg.History.Add(op)
	}
}
