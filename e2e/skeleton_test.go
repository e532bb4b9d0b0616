package e2e

import (
	"strings"
	"testing"
	"time"
)

// A sale answered 201 is in the journal before the answer (posedge is
// killed with SIGKILL the moment the answer arrives, and the row is
// there), reaches HQ exactly once, and a retry with the same key answers
// the same sale without counting it twice.
func TestSaleIsJournaledBeforeAnswerAndReachesHQOnce(t *testing.T) {
	s := startStore(t, testenvOpts())
	s.PutItem("4006381333931", 250, 50)
	r := s.Sale("T01", "skel-1", "4006381333931", 3, 250)
	if r.Status != 201 {
		t.Fatalf("sale: %d %s", r.Status, r.Body)
	}
	flow := r.Flow()
	s.Edge.Kill()
	if n := s.JournalRows("flow_no = ?", flow); n != 1 {
		t.Fatalf("journal holds %s %d times right after the 201", flow, n)
	}
	s.StartEdge()

	again := s.Sale("T01", "skel-1", "4006381333931", 3, 250)
	if again.Status != 201 || again.Flow() != flow || again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(r.Body) {
		t.Fatalf("retry: %d %s (first %s)", again.Status, again.Body, r.Body)
	}
	item := s.T("T01", "GET", "/v1/items/4006381333931", nil, nil)
	if st := item.JSON()["stock"]; st != float64(47) {
		t.Fatalf("stock after one sale of 3 from 50: %v (%s)", st, item.Body)
	}
	daily := s.Admin("GET", "/admin/v1/stats/daily?date="+time.Now().UTC().Format("20060102"), nil)
	tot, _ := daily.JSON()["totals"].(map[string]any)
	if tot["sales"] != float64(1) || tot["sales_cents"] != float64(750) {
		t.Fatalf("daily totals after a sale and its replay: %s", daily.Body)
	}
	got := s.WaitHQ([]string{flow}, 30*time.Second)
	if got[flow] != 1 || len(got) != 1 {
		t.Fatalf("HQ rows: %v", got)
	}
	// The metrics the contract names (§4) are on the admin listener.
	metrics := string(s.Admin("GET", "/metrics", nil).Body)
	for _, name := range []string{"posedge_ratelimit_decisions_total{", "posedge_sales_total{", "posedge_journal_backlog ",
		"posedge_journal_oldest_unsynced_seconds ", "posedge_degraded ", "posedge_build_info{"} {
		if !strings.Contains(metrics, "\n"+name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

func TestUnauthenticatedAndMalformedChangeNothing(t *testing.T) {
	s := startStore(t, testenvOpts())
	s.PutItem("A1", 100, 5)
	cases := []struct {
		name   string
		auth   string
		body   any
		status int
		code   string
		// invalid: the request breaks docs/openapi.yaml (an unknown key
		// is well-formed: only the server can tell it is unknown).
		invalid bool
	}{
		{"no key", "", SaleJSON(), 401, "unauthorized", true},
		{"unknown key", "nope", SaleJSON(), 401, "unauthorized", false},
		{"malformed json", s.Keys["T01"], `{"lines": [`, 400, "invalid_json", true},
		{"unknown field", s.Keys["T01"], `{"lines":[{"barcode":"A1","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash","x":1}`, 400, "unknown_field", true},
	}
	for i, c := range cases {
		do := s.Do
		if c.invalid {
			do = s.DoInvalid
		}
		r := do(s.EdgeURL, c.auth, "POST", "/v1/sales", c.body, map[string]string{"Idempotency-Key": "bad-" + string(rune('a'+i))})
		if r.Status != c.status || r.Code() != c.code {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Body)
		}
	}
	if n := s.JournalRows(""); n != 0 {
		t.Fatalf("journal has %d rows after refused requests", n)
	}
	if st := s.T("T01", "GET", "/v1/items/A1", nil, nil).JSON()["stock"]; st != float64(5) {
		t.Fatalf("stock changed: %v", st)
	}
}
