package api

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

func TestConcurrentSalesNeverOversell(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("B1", 199, 5)
	var wg sync.WaitGroup
	statuses := make(chan resp, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			statuses <- e.sale([]string{"T01", "T02"}[i%2], fmt.Sprintf("over-%d", i), sale1("B1", 1, 199))
		}(i)
	}
	wg.Wait()
	close(statuses)
	ok, short := 0, 0
	for r := range statuses {
		switch {
		case r.status == 201:
			ok++
		case r.status == 409 && r.code() == "insufficient_stock":
			short++
		default:
			t.Errorf("unexpected %d %s", r.status, r.body)
		}
	}
	if ok != 5 || short != 15 {
		t.Fatalf("%d sold, %d refused; want 5 and 15", ok, short)
	}
	if s := e.stock("B1"); s != 0 {
		t.Fatalf("stock %d", s)
	}
	if d := e.daily()["totals"].(map[string]any); num(d["sales"]) != 5 || num(d["sales_cents"]) != 5*199 {
		t.Fatalf("daily %v", d)
	}
}

func TestOneKeyManyConcurrentRequestsIsOneSale(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("B1", 250, 100)
	var wg sync.WaitGroup
	res := make(chan resp, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); res <- e.sale("T01", "same-key", sale1("B1", 2, 250)) }()
	}
	wg.Wait()
	close(res)
	flows := map[string]bool{}
	for r := range res {
		switch {
		case r.status == 201:
			flows[r.flow()] = true
		case r.status == 409 && r.code() == "request_in_progress":
			if r.header.Get("Retry-After") != "1" {
				t.Errorf("in progress without Retry-After: 1: %v", r.header)
			}
		default:
			t.Errorf("unexpected %d %s", r.status, r.body)
		}
	}
	if len(flows) != 1 {
		t.Fatalf("flow numbers: %v", flows)
	}
	if s := e.stock("B1"); s != 98 {
		t.Fatalf("stock %d, want 98", s)
	}
	// A later retry replays the identical body.
	first := e.sale("T01", "same-key", sale1("B1", 2, 250))
	again := e.sale("T01", "same-key", sale1("B1", 2, 250))
	if first.status != 201 || string(first.body) != string(again.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replays differ: %s / %s", first.body, again.body)
	}
	// The same key with another body is refused; another terminal's same key is its own.
	if r := e.sale("T01", "same-key", sale1("B1", 3, 250)); r.status != 422 || r.code() != "idempotency_key_reused" {
		t.Fatalf("reused key: %d %s", r.status, r.body)
	}
	if r := e.sale("T02", "same-key", sale1("B1", 1, 250)); r.status != 201 || r.flow() == first.flow() {
		t.Fatalf("other terminal, same key: %d %s", r.status, r.body)
	}
}

func TestOddCentsAddUpExactly(t *testing.T) {
	e := newEnv(t, envOpts{})
	prices := []int64{1, 3, 7, 33, 99, 101, 1999, 12345}
	for _, p := range prices {
		e.putItem(fmt.Sprintf("P%d", p), p, 1_000_000)
	}
	var want, wantCash int64
	for i := 0; i < 600; i++ {
		p := prices[i%len(prices)]
		qty := int64(i%3 + 1)
		tender := []string{"cash", "card", "mobile", "other"}[i%4]
		body := map[string]any{"lines": []map[string]any{{"barcode": fmt.Sprintf("P%d", p), "qty": qty, "price_cents": p}},
			"total_cents": qty * p, "tender": tender}
		if r := e.sale([]string{"T01", "T02"}[i%2], fmt.Sprintf("odd-%d", i), body); r.status != 201 {
			t.Fatalf("sale %d: %d %s", i, r.status, r.body)
		}
		want += qty * p
		if tender == "cash" {
			wantCash += qty * p
		}
	}
	d := e.daily()
	tot := d["totals"].(map[string]any)
	if num(tot["sales"]) != 600 || num(tot["sales_cents"]) != want {
		t.Fatalf("totals %v, want 600 sales of %d cents", tot, want)
	}
	cash := d["tenders"].(map[string]any)["cash"].(map[string]any)
	if num(cash["sales_cents"]) != wantCash {
		t.Fatalf("cash %v, want %d", cash, wantCash)
	}
	terms := d["terminals"].(map[string]any)
	if num(terms["T01"].(map[string]any)["sales"])+num(terms["T02"].(map[string]any)["sales"]) != 600 {
		t.Fatalf("terminals %v", terms)
	}
	h := e.admin("GET", "/admin/v1/stats/hourly", nil).json()["hours"].(map[string]any)
	var hsum int64
	for _, v := range h {
		hsum += num(v.(map[string]any)["sales_cents"])
	}
	if len(h) != 24 || hsum != want {
		t.Fatalf("hourly: %d hours, %d cents, want %d", len(h), hsum, want)
	}
	// The journal agrees to the cent.
	var jsum int64
	rows, err := e.j.DayTotalsByGroup(t.Context(), e.ledger.Today())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		jsum += r.Totals.SalesCents
	}
	if jsum != want {
		t.Fatalf("journal %d, want %d", jsum, want)
	}
}

func TestRefundsNeverExceedTheSale(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("R1", 300, 10)
	e.putItem("R2", 50, 10)
	s := e.sale("T01", "to-refund", map[string]any{"lines": []map[string]any{
		{"barcode": "R1", "qty": 2, "price_cents": 280}, {"barcode": "R2", "qty": 1, "price_cents": 50}},
		"total_cents": 610, "tender": "card"})
	if s.status != 201 {
		t.Fatalf("sale %d %s", s.status, s.body)
	}
	orig := s.flow()
	refund := func(term, key string, lines []map[string]any, total int64) resp {
		return e.T(term, "POST", "/v1/refunds", map[string]any{"original_flow_no": orig, "lines": lines, "total_cents": total},
			map[string]string{"Idempotency-Key": key})
	}
	// Refunded at the sale's price (280), not the item master's (300), from another terminal.
	r1 := refund("T02", "rf-1", []map[string]any{{"barcode": "R1", "qty": 1}}, 280)
	if r1.status != 201 || r1.json()["kind"] != "refund" || r1.json()["original_flow_no"] != orig || r1.json()["tender"] != "card" || num(r1.json()["total_cents"]) != 280 {
		t.Fatalf("refund: %d %s", r1.status, r1.body)
	}
	if r := refund("T02", "rf-bad-total", []map[string]any{{"barcode": "R1", "qty": 1}}, 300); r.status != 400 || r.code() != "total_mismatch" {
		t.Fatalf("wrong total: %d %s", r.status, r.body)
	}
	if r := refund("T01", "rf-2", []map[string]any{{"barcode": "R1", "qty": 2}}, 560); r.status != 409 || r.code() != "refund_exceeds_sale" {
		t.Fatalf("exceeding refund: %d %s", r.status, r.body)
	}
	if r := refund("T01", "rf-3", []map[string]any{{"barcode": "R1", "qty": 1}, {"barcode": "R2", "qty": 1}}, 330); r.status != 201 {
		t.Fatalf("rest: %d %s", r.status, r.body)
	}
	if r := refund("T01", "rf-4", []map[string]any{{"barcode": "R2", "qty": 1}}, 50); r.status != 409 {
		t.Fatalf("nothing left: %d %s", r.status, r.body)
	}
	if r := e.T("T01", "POST", "/v1/refunds", map[string]any{"original_flow_no": "1999999999999999", "lines": []map[string]any{{"barcode": "R1", "qty": 1}}, "total_cents": 1},
		map[string]string{"Idempotency-Key": "rf-5"}); r.status != 404 || r.code() != "sale_not_found" {
		t.Fatalf("unknown original: %d %s", r.status, r.body)
	}
	if e.stock("R1") != 10 || e.stock("R2") != 10 {
		t.Fatalf("stock not restored: %d %d", e.stock("R1"), e.stock("R2"))
	}
	tot := e.daily()["totals"].(map[string]any)
	if num(tot["refunds"]) != 2 || num(tot["refund_cents"]) != 610 || num(tot["sales_cents"]) != 610 {
		t.Fatalf("totals %v", tot)
	}
	if g := e.T("T02", "GET", "/v1/sales/"+r1.flow(), nil, nil); g.status != 200 || string(g.body) != string(r1.body) {
		t.Fatalf("get refund: %d %s", g.status, g.body)
	}
}

func TestBatchUploadedTwiceCountsOnce(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("K1", 100, 1)
	// Two days ago (occurred_at must lie within the last 30 days), at
	// 23:30 and 10:00 UTC, the store's zone here.
	past := time.Now().UTC().AddDate(0, 0, -2)
	pastDay := past.Format("20060102")
	at := func(hhmm string) string { return past.Format("2006-01-02") + "T" + hhmm + ":00Z" }
	batch := map[string]any{"sales": []map[string]any{
		{"idempotency_key": "off-1", "lines": []map[string]any{{"barcode": "K1", "qty": 3, "price_cents": 100}}, "total_cents": 300, "tender": "cash", "occurred_at": at("23:30")},
		{"idempotency_key": "off-2", "lines": []map[string]any{{"barcode": "NEVER-SEEN", "qty": 1, "price_cents": 5}}, "total_cents": 5, "tender": "cash", "occurred_at": at("10:00")},
		{"idempotency_key": "off-3", "lines": []map[string]any{{"barcode": "K1", "qty": 1, "price_cents": 100}}, "total_cents": 99, "tender": "cash"},
	}}
	first := e.T("T01", "POST", "/v1/sales/batch", batch, nil)
	if first.status != 200 {
		t.Fatalf("batch: %d %s", first.status, first.body)
	}
	results := first.json()["results"].([]any)
	if len(results) != 3 || num(results[0].(map[string]any)["status"]) != 201 || num(results[1].(map[string]any)["status"]) != 201 ||
		num(results[2].(map[string]any)["status"]) != 400 {
		t.Fatalf("results %s", first.body)
	}
	second := e.T("T01", "POST", "/v1/sales/batch", batch, nil)
	r2 := second.json()["results"].([]any)
	if fmt.Sprint(r2[0].(map[string]any)["sale"]) != fmt.Sprint(results[0].(map[string]any)["sale"]) {
		t.Fatalf("replayed batch differs:\n%s\n%s", first.body, second.body)
	}
	if s := e.stock("K1"); s != -2 {
		t.Fatalf("stock %d, want -2 (a past sale is accepted whatever the stock)", s)
	}
	day := e.admin("GET", "/admin/v1/stats/daily?date="+pastDay, nil).json()["totals"].(map[string]any)
	if num(day["sales"]) != 2 || num(day["sales_cents"]) != 305 {
		t.Fatalf("day of occurred_at: %v", day)
	}
	if r := e.Invalid().T("T01", "POST", "/v1/sales/batch", map[string]any{"sales": make([]map[string]any, 101)}, nil); r.status != 400 || r.code() != "batch_too_large" {
		t.Fatalf("101 sales: %d %s", r.status, r.body)
	}
}

func TestPaymentTokens(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("Q1", 100, 10)
	tok := e.T("T01", "POST", "/v1/payment-tokens", nil, nil)
	if tok.status != 201 {
		t.Fatalf("token: %d %s", tok.status, tok.body)
	}
	key := tok.json()["token"].(string)
	if r := e.sale("T02", key, sale1("Q1", 1, 100)); r.status != 400 || r.code() != "token_invalid" {
		t.Fatalf("other terminal's token: %d %s", r.status, r.body)
	}
	r := e.sale("T01", key, sale1("Q1", 1, 100))
	if r.status != 201 {
		t.Fatalf("sale with token: %d %s", r.status, r.body)
	}
	if again := e.sale("T01", key, sale1("Q1", 1, 100)); again.status != 201 || again.flow() != r.flow() {
		t.Fatalf("replay with token: %d %s", again.status, again.body)
	}
	// The ledger marks the token COMPLETED off the answer's path (it rides
	// in the next run's pipeline, or its own after a few ms; the journal
	// already answers retries): wait for it, as a slow machine (or the race
	// detector) lands it after the replay's answer.
	testenv.WaitFor(t, 5*time.Second, "the token marked COMPLETED", func() bool {
		st, _ := e.rdb.HGet(t.Context(), "pe:{S1}:token:"+key, "state").Result()
		return st == "COMPLETED"
	})
	// An expired (or never issued) token.
	if r := e.sale("T01", "pt_"+strings.Repeat("ab", 16), sale1("Q1", 1, 100)); r.status != 400 || r.code() != "token_invalid" {
		t.Fatalf("expired token: %d %s", r.status, r.body)
	}
	if e.stock("Q1") != 9 {
		t.Fatalf("stock %d", e.stock("Q1"))
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("G1", 100, 10)
	line := func(extra string) string {
		return `{"lines":[{"barcode":"G1","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash"` + extra + `}`
	}
	big := `{"lines":[{"barcode":"G1","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash","receipt_no":"` + strings.Repeat("x", 70000) + `"}`
	cases := []struct {
		name, key, body string
		status          int
		code            string
		invalid         bool // the request breaks the description (it cannot see an exponent or a sum)
	}{
		{"fractional price", "k1", `{"lines":[{"barcode":"G1","qty":1,"price_cents":1.5}],"total_cents":1.5,"tender":"cash"}`, 400, "invalid_amount", true},
		{"string price", "k2", `{"lines":[{"barcode":"G1","qty":1,"price_cents":"100"}],"total_cents":100,"tender":"cash"}`, 400, "invalid_amount", true},
		{"negative price", "k3", `{"lines":[{"barcode":"G1","qty":1,"price_cents":-100}],"total_cents":-100,"tender":"cash"}`, 400, "invalid_amount", true},
		{"overflowing total", "k4", `{"lines":[{"barcode":"G1","qty":1,"price_cents":100}],"total_cents":99999999999999999999,"tender":"cash"}`, 400, "invalid_amount", true},
		{"exponent", "k5", `{"lines":[{"barcode":"G1","qty":1,"price_cents":1e2}],"total_cents":100,"tender":"cash"}`, 400, "invalid_amount", false},
		{"zero qty", "k6", `{"lines":[{"barcode":"G1","qty":0,"price_cents":100}],"total_cents":0,"tender":"cash"}`, 400, "invalid_qty", true},
		{"negative qty", "k7", `{"lines":[{"barcode":"G1","qty":-1,"price_cents":100}],"total_cents":-100,"tender":"cash"}`, 400, "invalid_qty", true},
		{"fractional qty", "k8", `{"lines":[{"barcode":"G1","qty":1.5,"price_cents":100}],"total_cents":150,"tender":"cash"}`, 400, "invalid_qty", true},
		{"total mismatch", "k9", `{"lines":[{"barcode":"G1","qty":2,"price_cents":100}],"total_cents":100,"tender":"cash"}`, 400, "total_mismatch", false},
		{"unknown field", "k10", line(`,"discount":5`), 400, "unknown_field", true},
		{"empty lines", "k11", `{"lines":[],"total_cents":0,"tender":"cash"}`, 400, "invalid_lines", true},
		{"unknown tender", "k12", `{"lines":[{"barcode":"G1","qty":1,"price_cents":100}],"total_cents":100,"tender":"iou"}`, 400, "invalid_tender", true},
		{"bad barcode", "k13", `{"lines":[{"barcode":"G 1","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash"}`, 400, "invalid_barcode", true},
		{"malformed", "k14", `{"lines":`, 400, "invalid_json", true},
		{"too large", "k15", big, 413, "body_too_large", true},
		{"bad key", "bad key!", line(""), 400, "invalid_idempotency_key", true},
		{"long key", strings.Repeat("k", 65), line(""), 400, "invalid_idempotency_key", true},
		{"missing key", "", line(""), 400, "idempotency_key_missing", true},
		{"unknown item", "k16", `{"lines":[{"barcode":"NOPE","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash"}`, 422, "unknown_item", false},
		{"trailing data", "k17", line("") + `{}`, 400, "invalid_json", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hdr := map[string]string{}
			if c.key != "" {
				hdr["Idempotency-Key"] = c.key
			}
			r := e.InvalidIf(c.invalid).T("T01", "POST", "/v1/sales", c.body, hdr)
			if r.status != c.status || r.code() != c.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, c.status, c.code)
			}
		})
	}
	if n, _ := e.j.Stats(t.Context()); n.Rows != 0 {
		t.Fatalf("journal rows %d", n.Rows)
	}
	if e.stock("G1") != 10 || num(e.daily()["totals"].(map[string]any)["sales"]) != 0 {
		t.Fatal("something changed")
	}
	if r := e.Invalid().T("T01", "GET", "/v1/nothing", nil, nil); r.status != 404 || r.code() != "not_found" {
		t.Fatalf("unknown path: %d %s", r.status, r.body)
	}
	if r := e.T("T01", "GET", "/v1/items/NOPE", nil, nil); r.status != 404 || r.code() != "item_not_found" {
		t.Fatalf("unknown item: %d %s", r.status, r.body)
	}
	if r := e.T("T01", "GET", "/v1/sales/1000000000009999", nil, nil); r.status != 404 || r.code() != "sale_not_found" {
		t.Fatalf("unknown sale: %d %s", r.status, r.body)
	}
}

func TestStatsOfADayWithoutSalesAreZeros(t *testing.T) {
	e := newEnv(t, envOpts{})
	d := e.admin("GET", "/admin/v1/stats/daily?date=20200101", nil)
	m := d.json()
	if d.status != 200 || len(m["terminals"].(map[string]any)) != 0 || len(m["tenders"].(map[string]any)) != 4 || num(m["totals"].(map[string]any)["sales"]) != 0 {
		t.Fatalf("%d %s", d.status, d.body)
	}
	if r := e.Invalid().admin("GET", "/admin/v1/stats/daily?date=2020-01-01", nil); r.status != 400 {
		t.Fatalf("bad date: %d", r.status)
	}
}
