package api

import (
	"regexp"
	"strconv"
	"syscall"
	"testing"
)

// When no replica confirms a money write within the WAIT timeout, the sale
// is still answered 201 (the journal holds it) and the shortfall counted.
func TestWaitShortfallIsCountedNotRefused(t *testing.T) {
	e := newEnv(t, envOpts{sentinel: true})
	e.putItem("W1", 100, 10)
	if r := e.sale("T01", "w-0", sale1("W1", 1, 100)); r.status != 201 {
		t.Fatalf("sale with replicas: %d %s", r.status, r.body)
	}
	if n := shortfall(t, e); n != 0 {
		t.Fatalf("shortfall %d with both replicas up", n)
	}
	for _, i := range []int{1, 2} {
		e.redis.Nodes[i].Signal(syscall.SIGSTOP)
	}
	defer func() {
		for _, i := range []int{1, 2} {
			e.redis.Nodes[i].Signal(syscall.SIGCONT)
		}
	}()
	if r := e.sale("T01", "w-1", sale1("W1", 1, 100)); r.status != 201 {
		t.Fatalf("sale with replicas frozen: %d %s", r.status, r.body)
	}
	if n := shortfall(t, e); n != 1 {
		t.Fatalf("shortfall %d, want 1", n)
	}
}

var shortfallRE = regexp.MustCompile(`(?m)^posedge_redis_wait_shortfall_total (\d+)`)

func shortfall(t *testing.T, e *apiEnv) int {
	t.Helper()
	m := shortfallRE.FindSubmatch(e.admin("GET", "/metrics", nil).body)
	if m == nil {
		t.Fatal("no posedge_redis_wait_shortfall_total in /metrics")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

func TestHTTPMetricsPerRoute(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("H1", 1, 1)
	// Twice: the second answer is counted on the child HTTPMetrics keeps.
	e.T("T01", "GET", "/v1/items/H1", nil, nil)
	e.T("T01", "GET", "/v1/items/H1", nil, nil)
	e.T("T01", "GET", "/v1/items/NOPE", nil, nil)
	m := string(e.admin("GET", "/metrics", nil).body)
	for _, want := range []string{
		`posedge_http_requests_total{code="200",listener="terminal",route="GET /v1/items/{barcode}"} 2`,
		`posedge_http_request_duration_seconds_count{listener="terminal",route="GET /v1/items/{barcode}"} 3`,
		`posedge_http_requests_total{code="404",listener="terminal",route="GET /v1/items/{barcode}"} 1`,
		`posedge_http_requests_total{code="200",listener="admin",route="PUT /admin/v1/items/{barcode}"} 1`,
	} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(m) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
