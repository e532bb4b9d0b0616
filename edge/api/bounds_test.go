package api

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// storeState is everything a refused request must leave as it was: every
// Redis key of the store but the rate limiter's (stock, counters, the flow
// sequence, idempotency records, refunded quantities) and the journal.
func (e *apiEnv) storeState(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	var names []string
	iter := e.rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		if k := iter.Val(); !strings.Contains(k, ":rl:") && !strings.HasSuffix(k, ":alive") {
			names = append(names, k)
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	for _, k := range names {
		typ, err := e.rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		switch typ {
		case "string":
			v, _ := e.rdb.Get(ctx, k).Result()
			fmt.Fprintf(&b, "%s = %q\n", k, v)
		case "hash":
			m, _ := e.rdb.HGetAll(ctx, k).Result()
			var fs []string
			for f, v := range m {
				fs = append(fs, fmt.Sprintf("%s=%q", f, v))
			}
			sort.Strings(fs)
			fmt.Fprintf(&b, "%s = {%s}\n", k, strings.Join(fs, " "))
		default:
			fmt.Fprintf(&b, "%s (%s)\n", k, typ)
		}
	}
	var jb bytes.Buffer
	if err := e.j.Export(ctx, &jb); err != nil {
		t.Fatal(err)
	}
	st, err := e.j.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "journal rows=%d max_flow=%s unapplied=%d\n%s", st.Rows, st.MaxFlowNo, st.Unapplied, jb.String())
	return b.String()
}

// wrapBatchSale is the batch sale: 21 lines of barcode ov whose
// qty × price_cents sum to 2^64 + 5,000,100 — wrapped, exactly the total.
func wrapBatchSale(key, occurredAt string) string {
	var lines []string
	for i := 0; i < 18; i++ {
		lines = append(lines, `{"barcode":"ov","qty":1000000,"price_cents":1000000000000}`)
	}
	lines = append(lines, `{"barcode":"ov","qty":1000000,"price_cents":446744073709}`,
		`{"barcode":"ov","qty":1,"price_cents":551716}`, `{"barcode":"ov","qty":1,"price_cents":5000000}`)
	return `{"idempotency_key":"` + key + `","lines":[` + strings.Join(lines, ",") + `],"total_cents":5000100,"tender":"cash","occurred_at":"` + occurredAt + `"}`
}

// The hostile inputs, through the API, in normal and in degraded
// mode: each is refused with the contract's code, three times over, and
// leaves stock, counters, flow numbers and the journal as they were.
func TestHostileMoneyIsRefusedAndChangesNothing(t *testing.T) {
	for _, degraded := range []bool{false, true} {
		t.Run(map[bool]string{false: "normal", true: "degraded"}[degraded], func(t *testing.T) {
			e := newEnv(t, envOpts{})
			e.putItem("ov", 100, 1000)
			e.putItem("G1", 100, 1000)
			orig := e.sale("T01", "orig", sale1("G1", 3, 100))
			if orig.status != 201 {
				t.Fatalf("original sale: %d %s", orig.status, orig.body)
			}
			if degraded {
				e.ledger.SetRedisDown(true)
			}
			now := time.Now().UTC()
			at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
			saleBody := func(qtyPrice, total string, extra string) string {
				return `{"lines":[{"barcode":"ov",` + qtyPrice + `}],"total_cents":` + total + `,"tender":"cash"` + extra + `}`
			}
			refund := func(body string) func(e *apiEnv, key string) resp {
				return func(e *apiEnv, key string) resp {
					return e.T("T01", "POST", "/v1/refunds", body, map[string]string{"Idempotency-Key": key})
				}
			}
			sale := func(body string) func(e *apiEnv, key string) resp {
				return func(e *apiEnv, key string) resp { return e.sale("T01", key, body) }
			}
			batch := func(sales ...string) func(e *apiEnv, key string) resp {
				return func(e *apiEnv, _ string) resp {
					return e.T("T01", "POST", "/v1/sales/batch", `{"sales":[`+strings.Join(sales, ",")+`]}`, nil)
				}
			}
			// invalid: the description rejects the request too. It cannot
			// see a duplicate key or a time relative to now, and a batch
			// is a valid request whatever its sales (each is refused in
			// its own result).
			cases := []struct {
				name    string
				send    func(e *apiEnv, key string) resp
				batch   bool // the refusal is the batch's only result
				code    string
				invalid bool
			}{
				{"21 lines summing to 2^64 + 5,000,100 (batch)", batch(wrapBatchSale("wrap", at(-time.Hour))), true, "invalid_amount", false},
				{"21 lines summing to 2^64 + 5,000,100 (sale)", sale("{" + strings.TrimPrefix(wrapBatchSale("x", at(0)), `{"idempotency_key":"x",`)), false, "invalid_amount", true},
				{"total 1e17", sale(saleBody(`"qty":1,"price_cents":100000000000000000`, "100000000000000000", "")), false, "invalid_amount", true},
				{"total 1e17 over 1000 units", sale(saleBody(`"qty":1000,"price_cents":100000000000000`, "100000000000000000", "")), false, "invalid_amount", true},
				{"total 9007199254740993", sale(saleBody(`"qty":1,"price_cents":9007199254740993`, "9007199254740993", "")), false, "invalid_amount", true},
				{"price just above max_sale_cents", sale(saleBody(`"qty":1,"price_cents":100000000001`, "100000000001", "")), false, "invalid_amount", true},
				{"line above max_sale_cents", sale(saleBody(`"qty":2,"price_cents":50000000001`, "100000000002", "")), false, "invalid_amount", true},
				{"duplicate qty", sale(`{"lines":[{"barcode":"ov","qty":1,"qty":40,"price_cents":100}],"total_cents":100,"tender":"cash"}`), false, "invalid_json", false},
				{"duplicate total", sale(`{"lines":[{"barcode":"ov","qty":1,"price_cents":100}],"total_cents":100,"total_cents":4000,"tender":"cash"}`), false, "invalid_json", false},
				{"TOTAL_CENTS", sale(`{"lines":[{"barcode":"ov","qty":1,"price_cents":100}],"TOTAL_CENTS":100,"tender":"cash"}`), false, "unknown_field", true},
				{"occurred_at 2 h ahead", sale(saleBody(`"qty":1,"price_cents":100`, "100", `,"occurred_at":"`+at(2*time.Hour)+`"`)), false, "invalid_occurred_at", false},
				{"occurred_at 40 d back", sale(saleBody(`"qty":1,"price_cents":100`, "100", `,"occurred_at":"`+at(-40*24*time.Hour)+`"`)), false, "invalid_occurred_at", false},
				{"batch sale 2 h ahead", batch(`{"idempotency_key":"b1","lines":[{"barcode":"ov","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash","occurred_at":"` + at(2*time.Hour) + `"}`), true, "invalid_occurred_at", false},
				{"batch sale 40 d back", batch(`{"idempotency_key":"b2","lines":[{"barcode":"ov","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash","occurred_at":"` + at(-40*24*time.Hour) + `"}`), true, "invalid_occurred_at", false},
				{"batch sale with a duplicate qty", batch(`{"idempotency_key":"b3","lines":[{"barcode":"ov","qty":1,"qty":40,"price_cents":100}],"total_cents":100,"tender":"cash"}`), true, "invalid_json", false},
				{"batch sale with TOTAL_CENTS", batch(`{"idempotency_key":"b4","lines":[{"barcode":"ov","qty":1,"price_cents":100}],"TOTAL_CENTS":100,"tender":"cash"}`), true, "unknown_field", false},
				{"refund total 1e17", refund(`{"original_flow_no":"` + orig.flow() + `","lines":[{"barcode":"G1","qty":1}],"total_cents":100000000000000000}`), false, "invalid_amount", true},
				{"refund with a duplicate qty", refund(`{"original_flow_no":"` + orig.flow() + `","lines":[{"barcode":"G1","qty":1,"qty":3}],"total_cents":100}`), false, "invalid_json", false},
				{"refund with Total_Cents", refund(`{"original_flow_no":"` + orig.flow() + `","lines":[{"barcode":"G1","qty":1}],"Total_Cents":100}`), false, "unknown_field", true},
			}
			// The original sale's record is marked COMPLETED off the
			// answer's path: wait for it, so the state is at rest.
			testenv.WaitFor(t, 5*time.Second, "the original sale's record COMPLETED", func() bool {
				names, err := e.rdb.Keys(context.Background(), "*idem:T01:orig").Result()
				if err != nil || len(names) != 1 {
					return false
				}
				st, _ := e.rdb.HGet(context.Background(), names[0], "state").Result()
				return st == "COMPLETED"
			})
			before := e.storeState(t)
			for i, c := range cases {
				for try := 1; try <= 3; try++ {
					r := c.send(e.InvalidIf(c.invalid), fmt.Sprintf("hostile-%d", i))
					status, code := r.status, r.code()
					if c.batch {
						res, _ := r.json()["results"].([]any)
						if r.status != 200 || len(res) != 1 {
							t.Fatalf("%s, try %d: batch answered %d %s", c.name, try, r.status, r.body)
						}
						one, _ := res[0].(map[string]any)
						status = int(num(one["status"]))
						errObj, _ := one["error"].(map[string]any)
						code, _ = errObj["code"].(string)
					}
					if status != 400 || code != c.code {
						t.Fatalf("%s, try %d: %d %s, want 400 %s", c.name, try, r.status, r.body, c.code)
					}
					if after := e.storeState(t); after != before {
						t.Fatalf("%s, try %d, changed the store:\nbefore:\n%s\nafter:\n%s", c.name, try, before, after)
					}
				}
			}
		})
	}
}

// Amounts at the bounds are exact end to end: a sale of max_sale_cents,
// its refund priced from the original, and the day's counters to the cent.
func TestMaxSaleCentsIsExactEndToEnd(t *testing.T) {
	e := newEnv(t, envOpts{})
	const max = 100_000_000_000
	e.putItem("BIG", 999_999_999, 1000)
	e.putItem("ONE", 1, 1000)
	body := map[string]any{"lines": []map[string]any{{"barcode": "BIG", "qty": 100, "price_cents": 999_999_999},
		{"barcode": "ONE", "qty": 100, "price_cents": 1}}, "total_cents": max, "tender": "card"}
	s := e.sale("T01", "big", body)
	if s.status != 201 || num(s.json()["total_cents"]) != max {
		t.Fatalf("sale of max_sale_cents: %d %s", s.status, s.body)
	}
	r := e.T("T01", "POST", "/v1/refunds", map[string]any{"original_flow_no": s.flow(),
		"lines": []map[string]any{{"barcode": "BIG", "qty": 100}}, "total_cents": 99_999_999_900}, map[string]string{"Idempotency-Key": "r-big"})
	if r.status != 201 {
		t.Fatalf("refund: %d %s", r.status, r.body)
	}
	tot := e.daily()["totals"].(map[string]any)
	// JSON numbers below 2^53 decode exactly into float64.
	if num(tot["sales_cents"]) != max || num(tot["refund_cents"]) != 99_999_999_900 {
		t.Fatalf("totals %v", tot)
	}
	if e.stock("BIG") != 1000 || e.stock("ONE") != 900 {
		t.Fatalf("stock %d %d", e.stock("BIG"), e.stock("ONE"))
	}
}

// The admin bodies are decoded as strictly as a till's.
func TestAdminBodiesAreStrict(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("A1", 100, 5)
	cases := []struct {
		name, method, path, body, code string
		invalid                        bool // the description rejects it too (it cannot see a duplicate key)
	}{
		{"item with a duplicate price", "PUT", "/admin/v1/items/A1", `{"name":"a","price_cents":1,"price_cents":100000,"stock":5}`, "invalid_json", false},
		{"item with a duplicate in another case", "PUT", "/admin/v1/items/A1", `{"name":"a","price_cents":1,"stock":5,"STOCK":9}`, "invalid_json", true},
		{"item with Price_Cents", "PUT", "/admin/v1/items/A1", `{"name":"a","Price_Cents":1,"stock":5}`, "unknown_field", true},
		{"promo with a duplicate coefficient", "POST", "/admin/v1/promo", `{"coefficient":1.5,"coefficient":10}`, "invalid_json", false},
		{"promo with Coefficient", "POST", "/admin/v1/promo", `{"Coefficient":1.5}`, "unknown_field", true},
	}
	for _, c := range cases {
		if r := e.InvalidIf(c.invalid).admin(c.method, c.path, c.body); r.status != 400 || r.code() != c.code {
			t.Errorf("%s: %d %s, want 400 %s", c.name, r.status, r.body, c.code)
		}
	}
	it := e.T("T01", "GET", "/v1/items/A1", nil, nil).json()
	if num(it["price_cents"]) != 100 || num(it["stock"]) != 5 {
		t.Fatalf("item changed: %v", it)
	}
	if p := e.admin("GET", "/admin/v1/promo", nil).json(); p["promo"] != nil {
		t.Fatalf("promo set: %v", p)
	}
}
