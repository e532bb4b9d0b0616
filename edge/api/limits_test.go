package api

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ratelimit"
)

func tightLimits() *ratelimit.Config {
	return &ratelimit.Config{StoreID: "S1", Store: ratelimit.Policy{Limit: 1000, Window: time.Second},
		Terminal: ratelimit.Policy{Limit: 100, Window: time.Second},
		Actions: map[string]ratelimit.Policy{"scan": {Limit: 20, Window: 5 * time.Second}, "pay": {Limit: 3, Window: 5 * time.Second},
			"refund": {Limit: 3, Window: 5 * time.Second}, "sync": {Limit: 1, Window: 60 * time.Second}},
		FallbackFraction: 0.5, RedisTimeout: time.Second}
}

var (
	policyRE = regexp.MustCompile(`^"([a-z]+)";q=(\d+);w=(\d+)$`)
	limitRE  = regexp.MustCompile(`^"([a-z]+)";r=(\d+);t=(\d+)$`)
)

// Every answer to an authenticated request carries the headers of the
// tightest level; the limit is charged before validation, so a refused
// body counts too; the (N+1)th is a 429 with a whole-second Retry-After.
func TestPayLimitHeadersAnd429(t *testing.T) {
	e := newEnv(t, envOpts{limits: tightLimits()})
	e.putItem("L1", 10, 100)
	answers := []resp{
		e.sale("T01", "l-1", sale1("L1", 1, 10)),
		e.Invalid().T("T01", "POST", "/v1/sales", `{"broken`, map[string]string{"Idempotency-Key": "l-2"}), // charged though invalid
		e.sale("T01", "l-1", sale1("L1", 1, 10)),                                                           // a replay is charged too
		e.sale("T01", "l-3", sale1("L1", 1, 10)),
	}
	for i, r := range answers[:3] {
		p := policyRE.FindStringSubmatch(r.header.Get("RateLimit-Policy"))
		l := limitRE.FindStringSubmatch(r.header.Get("RateLimit"))
		if p == nil || l == nil || p[1] != "pay" || p[2] != "3" || p[3] != "5" || l[1] != "pay" || l[2] != strconv.Itoa(2-i) {
			t.Fatalf("answer %d headers: %q / %q (%d %s)", i, r.header.Get("RateLimit-Policy"), r.header.Get("RateLimit"), r.status, r.body)
		}
	}
	denied := answers[3]
	ra, _ := strconv.Atoi(denied.header.Get("Retry-After"))
	if denied.status != 429 || denied.code() != "rate_limited" || ra < 1 || ra > 5 {
		t.Fatalf("4th pay within 5 s: %d %s Retry-After %q", denied.status, denied.body, denied.header.Get("Retry-After"))
	}
	if l := limitRE.FindStringSubmatch(denied.header.Get("RateLimit")); l == nil || l[2] != "0" {
		t.Fatalf("429 RateLimit header %q", denied.header.Get("RateLimit"))
	}
	// The denied sale changed nothing and the other terminal is not affected.
	if n, _ := e.j.Stats(t.Context()); n.Rows != 1 {
		t.Fatalf("journal rows %d", n.Rows)
	}
	if r := e.sale("T02", "l-4", sale1("L1", 1, 10)); r.status != 201 {
		t.Fatalf("other terminal: %d %s", r.status, r.body)
	}
	// Endpoints without an action carry the store or terminal level.
	if r := e.T("T01", "GET", "/v1/sales/"+answers[0].flow(), nil, nil); r.status != 200 || r.header.Get("RateLimit-Policy") == "" {
		t.Fatalf("get sale: %d %v", r.status, r.header)
	}
}

func TestBatchIsChargedOnceAtSync(t *testing.T) {
	e := newEnv(t, envOpts{limits: tightLimits()})
	body := map[string]any{"sales": []map[string]any{
		{"idempotency_key": "b-1", "lines": []map[string]any{{"barcode": "X", "qty": 1, "price_cents": 1}}, "total_cents": 1, "tender": "cash"},
		{"idempotency_key": "b-2", "lines": []map[string]any{{"barcode": "X", "qty": 1, "price_cents": 1}}, "total_cents": 1, "tender": "cash"},
	}}
	if r := e.T("T01", "POST", "/v1/sales/batch", body, nil); r.status != 200 || r.header.Get("RateLimit-Policy") != `"sync";q=1;w=60` {
		t.Fatalf("batch: %d %v %s", r.status, r.header, r.body)
	}
	if r := e.T("T01", "POST", "/v1/sales/batch", body, nil); r.status != 429 {
		t.Fatalf("second batch within the sync window: %d %s", r.status, r.body)
	}
	// Two sales in one batch did not spend the pay budget.
	for i := 0; i < 3; i++ {
		if r := e.sale("T01", fmt.Sprintf("p-%d", i), sale1("X", 1, 1)); r.status == 429 {
			t.Fatalf("pay %d denied after a batch: %s", i, r.body)
		}
	}
}

func TestFailedAuthenticationIsLimitedPerAddress(t *testing.T) {
	e := newEnv(t, envOpts{})
	for i := 0; i < 10; i++ {
		if r := e.do(e.term.URL, "wrong", "GET", "/v1/items/A", nil, nil); r.status != 401 {
			t.Fatalf("failure %d: %d", i, r.status)
		}
	}
	r := e.T("T01", "GET", "/v1/items/A", nil, nil) // a valid key from the same address
	if r.status != 429 || r.code() != "rate_limited" || r.header.Get("Retry-After") == "" {
		t.Fatalf("after 10 failures: %d %s", r.status, r.body)
	}
}

func TestPromoEndpoint(t *testing.T) {
	e := newEnv(t, envOpts{limits: tightLimits()})
	for _, bad := range []struct {
		body    string
		invalid bool // the description rejects it too
	}{{`{}`, true}, {`{"coefficient": 0}`, false /* minimum 0 in the description, for generators that read exclusiveMinimum the 3.0 way; the server refuses 0 */}, {`{"coefficient": 10.5}`, true}, {`{"coefficient": -1}`, true},
		{`{"coefficient": "2"}`, true}, {`{"coefficient": 2, "ttl_seconds": 0}`, true}, {`{"coefficient": 2, "actions": ["dance"]}`, true},
		{`{"coefficient": 2, "starts_at": "tomorrow"}`, false}, {`{"coefficient": 2, "colour": 1}`, true}} {
		if r := e.InvalidIf(bad.invalid).admin("POST", "/admin/v1/promo", bad.body); r.status != 400 {
			t.Errorf("%s: %d %s", bad.body, r.status, r.body)
		}
	}
	r := e.admin("POST", "/admin/v1/promo", `{"coefficient": 2, "ttl_seconds": 60, "actions": ["pay"]}`)
	if r.status != 200 || r.json()["coefficient"] != float64(2) {
		t.Fatalf("promo: %d %s", r.status, r.body)
	}
	e.putItem("M1", 1, 100)
	if s := e.sale("T01", "m-1", sale1("M1", 1, 1)); s.header.Get("RateLimit-Policy") != `"pay";q=6;w=5` {
		t.Fatalf("pay limit under a ×2 promotion: %q", s.header.Get("RateLimit-Policy"))
	}
}
