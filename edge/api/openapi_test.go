package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/posedge/posedge/edge/health"
	"github.com/posedge/posedge/edge/ratelimit"
	"github.com/posedge/posedge/edge/status"
	"github.com/posedge/posedge/internal/apispec"
	"github.com/posedge/posedge/internal/testenv"
)

// specFile is the API description every answer of the real handlers is
// checked against, so the documentation cannot drift from the server.
const specFile = "../../docs/openapi.yaml"

// routeSources are the packages that register routes on the two
// listeners (edge/daemon adds admin routes to NewAdmin); every pattern
// they register must be described in specFile.
var routeSources = map[string]string{"api": ".", "daemon": "../daemon"}

// loadSpec loads specFile for a test (apispec holds the loading and
// checking every HTTP test of the module shares).
func loadSpec(t testing.TB) *apispec.Spec {
	t.Helper()
	s, err := apispec.Load(specFile)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// apiChecks holds every exchange of this package's tests with the
// handlers to docs/openapi.yaml by testenv's rules (the ones the e2e
// tests follow): a request the description rejects fails the test unless
// it is marked meant to be invalid, and then the server must answer 4xx;
// every answer must be described. Loaded once for the package.
var apiChecks = sync.OnceValues(testenv.NewAPICheck)

func apiCheck(t testing.TB) *testenv.APICheck {
	t.Helper()
	c, err := apiChecks()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMain(m *testing.M) {
	code := m.Run()
	if c, err := apiChecks(); err == nil && c.Counts.Requests.Load() > 0 {
		fmt.Printf("edge/api: %s\n", c.Counts)
	}
	os.Exit(code)
}

// servedBy is the x-posedge-served-by extension of an operation:
// "daemon" for the admin routes edge/daemon adds to NewAdmin.
func servedBy(op *v3.Operation) string {
	if op.Extensions == nil {
		return ""
	}
	if n, ok := op.Extensions.Get("x-posedge-served-by"); ok && n != nil {
		return n.Value
	}
	return ""
}

// testedIn is the x-posedge-tested-in extension of an operation: the
// test of this package that answers it, when this one cannot.
func testedIn(op *v3.Operation) string {
	if op.Extensions == nil {
		return ""
	}
	if n, ok := op.Extensions.Get("x-posedge-tested-in"); ok && n != nil {
		return n.Value
	}
	return ""
}

// testExists reports whether a test function of that name is in this
// package's test files.
func testExists(t *testing.T, name string) bool {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "\nfunc "+name+"(t *testing.T)") {
			return true
		}
	}
	return false
}

// The description is a valid OpenAPI 3.1 document and every example in it
// is valid against the schema it illustrates.
func TestOpenAPIDocumentAndExamples(t *testing.T) {
	s := loadSpec(t)
	for _, e := range s.ValidateDocument() {
		t.Errorf("document: %s", e)
	}
	_, problems := s.CheckExamples()
	for _, p := range problems {
		t.Error(p)
	}
}

// registeredRoutes maps the mux patterns ("METHOD /path") the route
// sources register to the source that registers each.
func registeredRoutes(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for who, dir := range routeSources {
		routes, err := apispec.RegisteredRoutes(dir)
		if err != nil {
			t.Fatal(err)
		}
		for r := range routes {
			out[r] = who
		}
	}
	return out
}

// Every route the servers register is described, and every described
// operation is registered by the source its x-posedge-served-by names.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	s := loadSpec(t)
	routes := registeredRoutes(t)
	if len(routes) < 10 {
		t.Fatalf("found only %d routes in %v: the route scan is broken", len(routes), routeSources)
	}
	for r, who := range routes {
		op, ok := s.Ops[r]
		if !ok {
			t.Errorf("%s (registered in %s) is not in %s", r, routeSources[who], specFile)
			continue
		}
		if want := servedBy(op); (who == "daemon") != (want == "daemon") {
			t.Errorf("%s: registered in %s but x-posedge-served-by is %q", r, routeSources[who], want)
		}
	}
	for key := range s.Ops {
		if _, ok := routes[key]; !ok {
			t.Errorf("%s is described in %s but no listener registers it", key, specFile)
		}
	}
}

// --- real answers against the description ---------------------------------

type oaServer struct {
	listener string // terminal or admin: the tag of its operations
	url      string
	auth     string // Authorization header sent unless a case says otherwise
}

type oaCase struct {
	srv     *oaServer
	method  string
	path    string
	noAuth  bool
	auth    string // another key than the server's
	hdr     map[string]string
	body    any
	status  int
	code    string
	badReq  bool // the request breaks the description: the validator must say so
	unknown bool // a path the description does not have (404 not_found)
}

type oaRun struct {
	t       *testing.T
	s       *apispec.Spec
	check   *testenv.APICheck
	covered map[string]bool // "METHOD /template status"
	client  *http.Client
}

func (x *oaRun) request(c oaCase) *http.Request {
	var rd io.Reader
	switch b := c.body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			x.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(c.method, c.srv.url+c.path, rd)
	if err != nil {
		x.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case c.noAuth:
	case c.auth != "":
		req.Header.Set("Authorization", "Bearer "+c.auth)
	case c.srv.auth != "":
		req.Header.Set("Authorization", "Bearer "+c.srv.auth)
	}
	for k, v := range c.hdr {
		req.Header.Set(k, v)
	}
	return req
}

// do sends c and checks the answer: the expected status and code, and the
// request and the answer (status, headers, body) against the description
// by testenv's rules: a badReq or unknown request must be rejected by the
// description and answered 4xx.
func (x *oaRun) do(c oaCase) resp {
	t := x.t
	t.Helper()
	name := c.method + " " + c.path
	tpl := x.s.Template(c.srv.listener, c.method, strings.SplitN(c.path, "?", 2)[0])
	if c.unknown != (tpl == "") {
		t.Errorf("%s: described path %q, but the case says unknown=%v", name, tpl, c.unknown)
		c.unknown = tpl == ""
	}
	req := x.request(c)
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	res, err := x.client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	r := resp{res.StatusCode, res.Header, body}
	if r.status != c.status || (c.code != "" && r.code() != c.code) {
		t.Errorf("%s: got %d %s, want %d %s", name, r.status, body, c.status, c.code)
	}
	x.check.Exchange(t, c.srv.listener, c.badReq || c.unknown, x.request(c), reqBody, res, body)
	if !c.unknown {
		x.covered[c.method+" "+tpl+" "+strconv.Itoa(r.status)] = true
	}
	return r
}

// notProvoked are the described statuses this test cannot cause through
// the real handlers without a fake, and why.
var notProvoked = map[string]string{
	"500": "an internal failure (a bug, or the limiter failing) cannot be caused from outside",
}

func TestAnswersMatchOpenAPI(t *testing.T) {
	s := loadSpec(t)
	e := newEnv(t, envOpts{})
	x := &oaRun{t: t, s: s, check: e.check, covered: map[string]bool{},
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	loose := func(store string, termLimit int) *ratelimit.Limiter {
		p := ratelimit.Policy{Limit: 100000, Window: time.Second}
		lim, err := ratelimit.New(e.rdb, ratelimit.Config{StoreID: store, Store: p, Terminal: ratelimit.Policy{Limit: termLimit, Window: time.Minute},
			Actions:          map[string]ratelimit.Policy{"scan": p, "pay": p, "refund": p, "sync": p},
			FallbackFraction: 0.5, RedisTimeout: time.Second}, log, prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
	hashes := map[string]string{}
	for id, key := range e.keys {
		hashes[sha(key)] = id
	}
	terminal := func(lim *ratelimit.Limiter) *oaServer {
		srv := httptest.NewServer(NewTerminal(TerminalDeps{Keys: hashes, Ledger: e.ledger, Limiter: lim,
			Guard: ratelimit.NewAuthGuard(10, time.Minute, time.Now), Log: log}))
		t.Cleanup(srv.Close)
		return &oaServer{listener: "terminal", url: srv.URL, auth: e.keys["T01"]}
	}
	term := &oaServer{listener: "terminal", url: e.term.URL, auth: e.keys["T01"]}
	guarded := terminal(loose("S1", 100000)) // its own failed-authentication guard
	tight := terminal(loose("S9", 3))        // 3 requests a minute per terminal

	reg := prometheus.NewRegistry()
	started := time.Now()
	adminToken := strings.Repeat("a", 40)
	adminSrv := httptest.NewServer(NewAdmin(AdminDeps{Token: adminToken, Ledger: e.ledger, Limiter: loose("S1", 100000), Log: log,
		HTTP: NewHTTPMetrics(reg), Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Ready:   func(ctx context.Context) error { return e.ledger.Ping(ctx) },
		SyncNow: func() {},
		Status: func(ctx context.Context) any {
			js, _ := e.j.Stats(ctx)
			return status.Evaluate(status.Facts{Now: time.Now(), DaemonUp: true, Version: "test", StoreID: "S1",
				UptimeSeconds: int64(time.Since(started) / time.Second), Ledger: health.Ledger{Degraded: e.ledger.Degraded()},
				Redis:   health.Redis{OK: e.ledger.Ping(ctx) == nil, Master: e.redis.NodeAddr(0), WantReplicas: 0},
				HQ:      health.HQ{Connected: true},
				Journal: health.Journal{Path: "journal.db", DiskFree: 1 << 40, Rows: js.Rows}}, status.Thresholds{})
		}}))
	t.Cleanup(adminSrv.Close)
	admin := &oaServer{listener: "admin", url: adminSrv.URL, auth: adminToken}
	freshSrv := httptest.NewServer(NewAdmin(AdminDeps{Token: adminToken, Ledger: e.ledger, Limiter: loose("S1", 100000), Log: log,
		HTTP: NewHTTPMetrics(prometheus.NewRegistry())}))
	t.Cleanup(freshSrv.Close)
	freshAdmin := &oaServer{listener: "admin", url: freshSrv.URL, auth: adminToken}

	big := `{"name":"` + strings.Repeat("x", 70<<10) + `"}`
	// Over 1 MiB, a bound no schema can state: so it holds 101 items too,
	// a bound the description does state; the size is answered first.
	hugeItems := make([]string, 101)
	for i := range hugeItems {
		hugeItems[i] = `"` + strings.Repeat("x", 11<<10) + `"`
	}
	hugeBatch := `{"sales":[` + strings.Join(hugeItems, ",") + `]}`
	line := func(bc string, qty, price int64) map[string]any {
		return map[string]any{"barcode": bc, "qty": qty, "price_cents": price}
	}
	sale := func(total int64, lines ...map[string]any) map[string]any {
		return map[string]any{"lines": lines, "total_cents": total, "tender": "cash"}
	}
	key := func(k string) map[string]string { return map[string]string{"Idempotency-Key": k} }
	adjust := func(bc string) string { return "/admin/v1/items/" + bc + "/stock-adjustments" }

	// --- the tokenless loopback admin listener refuses cross-site
	// requests (docs/security.md, finding 7): every operation but
	// /healthz answers a foreign Origin 403, every write with a body not
	// JSON 415, as described.
	openSrv := httptest.NewServer(NewAdmin(AdminDeps{Ledger: e.ledger, Limiter: loose("S1", 100000), Log: log,
		HTTP: NewHTTPMetrics(prometheus.NewRegistry())}))
	t.Cleanup(openSrv.Close)
	tokenless := &oaServer{listener: "admin", url: openSrv.URL}
	for _, key := range slices.Sorted(maps.Keys(s.Ops)) {
		method, tpl, _ := strings.Cut(key, " ")
		path := strings.ReplaceAll(tpl, "{barcode}", "6901234567890")
		if tpl == "/healthz" || s.Template("admin", method, path) != tpl {
			continue
		}
		// Without a body, or with one of another type, the request breaks
		// the description of an operation that takes a JSON body.
		rb := s.Ops[key].RequestBody
		needsBody := rb != nil && rb.Required != nil && *rb.Required
		x.do(oaCase{srv: tokenless, method: method, path: path, hdr: map[string]string{"Origin": "http://evil.example"},
			status: 403, code: "forbidden_origin", badReq: needsBody})
		if method == "POST" || method == "PUT" {
			x.do(oaCase{srv: tokenless, method: method, path: path, body: "{}", hdr: map[string]string{"Content-Type": "text/plain"},
				status: 415, code: "unsupported_media_type", badReq: rb != nil})
		}
	}

	// --- admin, Redis up ---
	// A request without the token is one the description accepts (a
	// loopback admin listener may run without a token); this listener has
	// one, so it answers 401.
	for _, c := range []oaCase{
		{srv: admin, method: "GET", path: "/healthz", noAuth: true, status: 200},
		{srv: admin, method: "GET", path: "/readyz", status: 200},
		{srv: admin, method: "GET", path: "/readyz", noAuth: true, status: 401, code: "unauthorized"},
		{srv: admin, method: "GET", path: "/metrics", status: 200},
		{srv: admin, method: "GET", path: "/metrics", auth: "wrong", status: 401, code: "unauthorized"},
		{srv: admin, method: "GET", path: "/admin/v1/status", status: 200},
		{srv: admin, method: "GET", path: "/admin/v1/status", noAuth: true, status: 401},
		{srv: admin, method: "GET", path: "/admin/v1/promo", status: 200},
		{srv: admin, method: "PUT", path: "/admin/v1/items/A1", body: map[string]any{"name": "Apple", "price_cents": 500, "stock": 5}, status: 200},
		{srv: admin, method: "PUT", path: "/admin/v1/items/A2", body: map[string]any{"name": "Pear", "price_cents": 0, "stock": 0}, status: 200},
		{srv: admin, method: "PUT", path: "/admin/v1/items/bad!code", body: map[string]any{"name": "x", "price_cents": 1, "stock": 1}, status: 400, code: "invalid_barcode", badReq: true},
		{srv: admin, method: "PUT", path: "/admin/v1/items/A3", body: map[string]any{"name": "", "price_cents": 1, "stock": 1}, status: 400, code: "invalid_name", badReq: true},
		{srv: admin, method: "PUT", path: "/admin/v1/items/A3", body: map[string]any{"name": "x", "price_cents": 1.5, "stock": 1}, status: 400, code: "invalid_amount", badReq: true},
		{srv: admin, method: "PUT", path: "/admin/v1/items/A3", body: map[string]any{"name": "x", "price_cents": 1, "stock": 1, "colour": "red"}, status: 400, code: "unknown_field", badReq: true},
		{srv: admin, method: "PUT", path: "/admin/v1/items/A3", body: big, status: 413, code: "body_too_large", badReq: true},
		{srv: admin, method: "PUT", path: "/admin/v1/items/A3", noAuth: true, body: map[string]any{"name": "x", "price_cents": 1, "stock": 1}, status: 401},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": 3, "reason": "receiving", "idempotency_key": "adj-1"}, status: 201},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": 3, "reason": "receiving", "idempotency_key": "adj-1"}, status: 201},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": 4, "reason": "receiving", "idempotency_key": "adj-1"}, status: 422, code: "idempotency_key_reused"},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": -4, "reason": "damage", "idempotency_key": "adj-2"}, status: 409, code: "insufficient_stock"},
		{srv: admin, method: "POST", path: adjust("NOPE"), body: map[string]any{"delta": 1, "reason": "count", "idempotency_key": "adj-3"}, status: 404, code: "item_not_found"},
		{srv: admin, method: "POST", path: adjust("bad!code"), body: map[string]any{"delta": 1, "reason": "count", "idempotency_key": "adj-3"}, status: 400, code: "invalid_barcode", badReq: true},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": 1.5, "reason": "count", "idempotency_key": "adj-3"}, status: 400, code: "invalid_qty", badReq: true},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": 0, "reason": "count", "idempotency_key": "adj-3"}, status: 400, code: "invalid_qty", badReq: true},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": 1, "reason": "gift", "idempotency_key": "adj-3"}, status: 400, code: "invalid_reason", badReq: true},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": 1, "reason": "count", "idempotency_key": "bad key"}, status: 400, code: "invalid_idempotency_key", badReq: true},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": 1, "reason": "count", "idempotency_key": "adj-3", "stock": 9}, status: 400, code: "unknown_field", badReq: true},
		{srv: admin, method: "POST", path: adjust("A2"), body: big, status: 413, code: "body_too_large", badReq: true},
		// Its own listener (own failed-authentication guard): the admin
		// listener above already has its ten failures budgeted.
		{srv: freshAdmin, method: "POST", path: adjust("A2"), noAuth: true, body: map[string]any{"delta": 1, "reason": "count", "idempotency_key": "adj-3"}, status: 401},
		{srv: admin, method: "POST", path: "/admin/v1/promo", body: map[string]any{"coefficient": 2, "ttl_seconds": 60, "actions": []string{"scan"}}, status: 200},
		{srv: admin, method: "GET", path: "/admin/v1/promo", status: 200},
		{srv: admin, method: "POST", path: "/admin/v1/promo", body: map[string]any{"coefficient": 11}, status: 400, code: "invalid_promo", badReq: true},
		{srv: admin, method: "POST", path: "/admin/v1/promo", body: `{"coefficient": 2,`, status: 400, code: "invalid_json", badReq: true},
		{srv: admin, method: "POST", path: "/admin/v1/promo", body: big, status: 413, badReq: true},
		{srv: admin, method: "POST", path: "/admin/v1/promo", noAuth: true, body: map[string]any{"coefficient": 2}, status: 401},
		{srv: admin, method: "GET", path: "/admin/v1/promo", noAuth: true, status: 401},
		{srv: admin, method: "POST", path: "/admin/v1/sync/now", status: 202},
		{srv: admin, method: "POST", path: "/admin/v1/sync/now", noAuth: true, status: 401},
		{srv: admin, method: "GET", path: "/admin/v1/stats/daily?date=2026130", status: 400, code: "invalid_date", badReq: true},
		{srv: admin, method: "GET", path: "/admin/v1/stats/daily?date=20261399", status: 400, code: "invalid_date"},
		{srv: admin, method: "GET", path: "/admin/v1/stats/daily", noAuth: true, status: 401},
		{srv: admin, method: "GET", path: "/admin/v1/stats/hourly?date=x", status: 400, code: "invalid_date", badReq: true},
		{srv: admin, method: "GET", path: "/admin/v1/stats/hourly", noAuth: true, status: 401},
		{srv: admin, method: "GET", path: "/v1/items/A1", status: 404, code: "not_found", unknown: true},
		{srv: admin, method: "DELETE", path: "/admin/v1/items/A1", status: 404, code: "not_found", unknown: true},
	} {
		x.do(c)
	}

	// --- terminal, Redis up ---
	if r := x.do(oaCase{srv: term, method: "GET", path: "/v1/items/A1", status: 200}); num(r.json()["price_cents"]) != 500 {
		t.Fatalf("item: %s", r.body)
	}
	tok := x.do(oaCase{srv: term, method: "POST", path: "/v1/payment-tokens", status: 201}).json()["token"].(string)
	// The till's price (450) is what is recorded, not the master's 500.
	first := x.do(oaCase{srv: term, method: "POST", path: "/v1/sales", hdr: key("k-1"), status: 201,
		body: map[string]any{"lines": []any{line("A1", 2, 450)}, "total_cents": 900, "tender": "card", "receipt_no": "R-1", "cashier_id": "C1"}})
	if first.json()["total_cents"] != 900.0 || !strings.Contains(string(first.body), `"price_cents":450`) {
		t.Fatalf("the till's price was not what was recorded: %s", first.body)
	}
	flow := first.flow()
	replay := x.do(oaCase{srv: term, method: "POST", path: "/v1/sales", hdr: key("k-1"), status: 201,
		body: map[string]any{"lines": []any{line("A1", 2, 450)}, "total_cents": 900, "tender": "card", "receipt_no": "R-1", "cashier_id": "C1"}})
	if replay.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay.body, first.body) {
		t.Fatalf("replay: %v %s", replay.header, replay.body)
	}
	x.do(oaCase{srv: term, method: "POST", path: "/v1/sales", hdr: key(tok), body: sale(500, line("A1", 1, 500)), status: 201})
	batch := x.do(oaCase{srv: term, method: "POST", path: "/v1/sales/batch", status: 200, body: map[string]any{"sales": []any{
		map[string]any{"idempotency_key": "b-1", "lines": []any{line("NOT-IN-MASTER", 3, 10)}, "total_cents": 30, "tender": "other",
			"occurred_at": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)},
		map[string]any{"idempotency_key": "b-2", "lines": []any{line("A2", 1, 10)}, "total_cents": 11, "tender": "cash"},
	}}})
	if !strings.Contains(string(batch.body), `"status":201`) || !strings.Contains(string(batch.body), `"total_mismatch"`) {
		t.Fatalf("batch: %s", batch.body)
	}
	// Whatever its items are, a batch is a request the description
	// accepts: each item is refused in its own result, within a 200.
	odd := x.do(oaCase{srv: term, method: "POST", path: "/v1/sales/batch", status: 200,
		body: `{"sales":["x",null,{"lines":[]},{"idempotency_key":"bad key","lines":[{"barcode":"A1","qty":1,"price_cents":1}],"total_cents":1,"tender":"cash"},` +
			`{"idempotency_key":"b-3","lines":[{"barcode":"A1","qty":1,"price_cents":1}],"total_cents":1,"tender":"cash","discount":5}]}`})
	var oddCodes []string
	for _, res := range odd.json()["results"].([]any) {
		r := res.(map[string]any)
		code, _ := r["error"].(map[string]any)["code"].(string)
		oddCodes = append(oddCodes, fmt.Sprint(num(r["status"]), " ", code))
	}
	if got, want := strings.Join(oddCodes, ", "), "400 invalid_json, 400 idempotency_key_missing, 400 idempotency_key_missing, 400 invalid_idempotency_key, 400 unknown_field"; got != want {
		t.Fatalf("batch of malformed items: results %s, want %s", got, want)
	}
	x.do(oaCase{srv: term, method: "GET", path: "/v1/sales/" + flow, status: 200})
	refund := map[string]any{"original_flow_no": flow, "lines": []any{map[string]any{"barcode": "A1", "qty": 1}}, "total_cents": 450}
	if r := x.do(oaCase{srv: term, method: "POST", path: "/v1/refunds", hdr: key("r-1"), body: refund, status: 201}); r.json()["kind"] != "refund" {
		t.Fatalf("refund: %s", r.body)
	}
	tooMany := make([]any, 101)
	for i := range tooMany {
		tooMany[i] = map[string]any{"idempotency_key": fmt.Sprintf("m-%d", i), "lines": []any{line("A1", 1, 1)}, "total_cents": 1, "tender": "cash"}
	}
	for _, c := range []oaCase{
		{method: "GET", path: "/v1/items/bad!code", status: 400, code: "invalid_barcode", badReq: true},
		{method: "GET", path: "/v1/items/NOPE", status: 404, code: "item_not_found"},
		{method: "POST", path: "/v1/payment-tokens", body: map[string]any{"terminal": "T01"}, status: 400, code: "unknown_field", badReq: true},
		{method: "POST", path: "/v1/payment-tokens", body: big, status: 413, code: "body_too_large", badReq: true},
		{method: "POST", path: "/v1/sales", hdr: key("k-1"), body: sale(450, line("A1", 1, 450)), status: 422, code: "idempotency_key_reused"},
		{method: "POST", path: "/v1/sales", hdr: key("k-2"), body: sale(100, line("A1", 1, 450)), status: 400, code: "total_mismatch"},
		{method: "POST", path: "/v1/sales", body: sale(450, line("A1", 1, 450)), status: 400, code: "idempotency_key_missing", badReq: true},
		{method: "POST", path: "/v1/sales", hdr: key("bad key"), body: sale(450, line("A1", 1, 450)), status: 400, code: "invalid_idempotency_key", badReq: true},
		{method: "POST", path: "/v1/sales", hdr: key("pt_0123456789abcdef0123456789abcdef"), body: sale(450, line("A1", 1, 450)), status: 400, code: "token_invalid"},
		{method: "POST", path: "/v1/sales", hdr: key("k-3"), body: sale(-1, line("A1", 1, -1)), status: 400, code: "invalid_amount", badReq: true},
		{method: "POST", path: "/v1/sales", hdr: key("k-3"), body: map[string]any{"lines": []any{line("A1", 1, 1)}, "total_cents": 1, "tender": "cheque"}, status: 400, code: "invalid_tender", badReq: true},
		{method: "POST", path: "/v1/sales", hdr: key("k-3"), body: sale(0, line("A1", 0, 1)), status: 400, code: "invalid_qty", badReq: true},
		{method: "POST", path: "/v1/sales", hdr: key("k-3"), body: `{"lines": [`, status: 400, code: "invalid_json", badReq: true},
		{method: "POST", path: "/v1/sales", hdr: key("k-4"), body: sale(5000, line("A1", 10, 500)), status: 409, code: "insufficient_stock"},
		{method: "POST", path: "/v1/sales", hdr: key("k-5"), body: sale(1, line("NOPE", 1, 1)), status: 422, code: "unknown_item"},
		{method: "POST", path: "/v1/sales", hdr: key("k-6"), body: big, status: 413, code: "body_too_large", badReq: true},
		{method: "POST", path: "/v1/sales/batch", body: map[string]any{"sales": tooMany}, status: 400, code: "batch_too_large", badReq: true},
		{method: "POST", path: "/v1/sales/batch", body: `{"sales": {}}`, status: 400, code: "invalid_json", badReq: true},
		{method: "POST", path: "/v1/sales/batch", body: hugeBatch, status: 413, code: "body_too_large", badReq: true},
		{method: "GET", path: "/v1/sales/1999999999999999", status: 404, code: "sale_not_found"},
		{method: "GET", path: "/v1/sales/abc", status: 404, code: "sale_not_found", badReq: true},
		{method: "POST", path: "/v1/refunds", hdr: key("r-1"), body: map[string]any{"original_flow_no": flow, "lines": []any{map[string]any{"barcode": "A1", "qty": 2}}, "total_cents": 900}, status: 422, code: "idempotency_key_reused"},
		{method: "POST", path: "/v1/refunds", hdr: key("r-2"), body: map[string]any{"original_flow_no": flow, "lines": []any{map[string]any{"barcode": "A1", "qty": 1}}, "total_cents": 500}, status: 400, code: "total_mismatch"},
		{method: "POST", path: "/v1/refunds", hdr: key("r-2"), body: map[string]any{"original_flow_no": flow, "lines": []any{line("A1", 1, 450)}, "total_cents": 450}, status: 400, code: "unknown_field", badReq: true},
		{method: "POST", path: "/v1/refunds", hdr: key("r-2"), body: map[string]any{"original_flow_no": "x", "lines": []any{map[string]any{"barcode": "A1", "qty": 1}}, "total_cents": 450}, status: 400, code: "invalid_flow_no", badReq: true},
		{method: "POST", path: "/v1/refunds", hdr: key("r-3"), body: map[string]any{"original_flow_no": "1999999999999999", "lines": []any{map[string]any{"barcode": "A1", "qty": 1}}, "total_cents": 450}, status: 404, code: "sale_not_found"},
		{method: "POST", path: "/v1/refunds", hdr: key("r-4"), body: map[string]any{"original_flow_no": flow, "lines": []any{map[string]any{"barcode": "A1", "qty": 2}}, "total_cents": 900}, status: 409, code: "refund_exceeds_sale"},
		{method: "POST", path: "/v1/refunds", hdr: key("r-5"), body: big, status: 413, badReq: true},
		{method: "GET", path: "/v1/nothing", status: 404, code: "not_found", unknown: true},
		{method: "DELETE", path: "/v1/sales/" + flow, status: 404, code: "not_found", unknown: true},
		{method: "GET", path: "/admin/v1/status", status: 404, code: "not_found", unknown: true},
		{method: "GET", path: "/metrics", status: 404, code: "not_found", unknown: true},
	} {
		c.srv = term
		r := x.do(c)
		if r.header.Get("RateLimit-Policy") == "" {
			t.Errorf("%s %s: no RateLimit-Policy on an authenticated answer", c.method, c.path)
		}
	}

	// Failed authentications: 401 on every path, then the address is blocked.
	paths := []oaCase{{method: "GET", path: "/v1/items/A1"}, {method: "POST", path: "/v1/payment-tokens"},
		{method: "POST", path: "/v1/sales", hdr: key("g-1"), body: sale(500, line("A1", 1, 500))},
		{method: "POST", path: "/v1/sales/batch", body: map[string]any{"sales": []any{map[string]any{"idempotency_key": "g-2", "lines": []any{line("A1", 1, 1)}, "total_cents": 1, "tender": "cash"}}}},
		{method: "GET", path: "/v1/sales/" + flow},
		{method: "POST", path: "/v1/refunds", hdr: key("g-3"), body: refund}}
	for i := 0; i < 10; i++ {
		c := paths[i%len(paths)]
		c.srv, c.status, c.code, c.badReq = guarded, 401, "unauthorized", i%2 == 0
		if c.badReq {
			c.noAuth = true
		} else {
			c.auth = "not-a-key" // a well-formed request with an unknown key
		}
		x.do(c)
	}
	for _, c := range paths {
		c.srv, c.status, c.code = guarded, 429, "rate_limited"
		if r := x.do(c); r.header.Get("Retry-After") == "" {
			t.Errorf("%s %s: a blocked address got no Retry-After", c.method, c.path)
		}
	}
	// Rate limits: 3 a minute per terminal, then every path is denied.
	for i := 0; i < 3; i++ {
		x.do(oaCase{srv: tight, method: "GET", path: "/v1/items/A1", status: 200})
	}
	for _, c := range paths {
		c.srv, c.status, c.code = tight, 429, "rate_limited"
		if r := x.do(c); r.header.Get("Retry-After") == "" || !strings.Contains(r.header.Get("RateLimit"), "r=0") {
			t.Errorf("%s %s: 429 headers %v", c.method, c.path, r.header)
		}
	}

	// --- Redis down: degraded mode ---
	e.redis.KillNode(0)
	for _, c := range []oaCase{
		{srv: term, method: "GET", path: "/v1/items/NEVER-SEEN", status: 503, code: "redis_unavailable"},
		{srv: term, method: "GET", path: "/v1/items/A1", status: 200},
		{srv: term, method: "POST", path: "/v1/payment-tokens", status: 503, code: "redis_unavailable"},
		{srv: term, method: "POST", path: "/v1/sales", hdr: key("d-1"), body: sale(500, line("A1", 1, 500)), status: 201},
		{srv: admin, method: "GET", path: "/readyz", status: 503, code: "not_ready"},
		{srv: admin, method: "GET", path: "/admin/v1/status", status: 200},
		{srv: admin, method: "PUT", path: "/admin/v1/items/A4", body: map[string]any{"name": "x", "price_cents": 1, "stock": 1}, status: 503, code: "redis_unavailable"},
		{srv: admin, method: "POST", path: adjust("A2"), body: map[string]any{"delta": 1, "reason": "count", "idempotency_key": "adj-4"}, status: 503, code: "redis_unavailable"},
		{srv: admin, method: "POST", path: "/admin/v1/promo", body: map[string]any{"coefficient": 2}, status: 503, code: "redis_unavailable"},
		{srv: admin, method: "GET", path: "/admin/v1/promo", status: 500, code: "internal"},
		{srv: admin, method: "GET", path: "/admin/v1/stats/daily", status: 200},
		{srv: admin, method: "GET", path: "/admin/v1/stats/hourly", status: 200},
	} {
		x.do(c)
	}
	// --- the journal gone too ---
	if err := e.j.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []oaCase{
		{srv: term, method: "POST", path: "/v1/sales", hdr: key("j-1"), body: sale(500, line("A1", 1, 500)), status: 503, code: "journal_unavailable"},
		{srv: term, method: "POST", path: "/v1/refunds", hdr: key("j-2"), body: refund, status: 503, code: "journal_unavailable"},
		{srv: term, method: "GET", path: "/v1/sales/" + flow, status: 503, code: "journal_unavailable"},
		{srv: admin, method: "GET", path: "/admin/v1/stats/daily", status: 503, code: "journal_unavailable"},
		{srv: admin, method: "GET", path: "/admin/v1/stats/hourly", status: 503, code: "journal_unavailable"},
	} {
		x.do(c)
	}

	// Every described status of every operation these handlers serve was
	// answered at least once.
	var missing []string
	for key, op := range s.Ops {
		if name := testedIn(op); name != "" {
			// Needs a reconciler, a replayer or poisoned Redis data: its
			// own test drives it through the same harness, whose every
			// answer is checked against this description too.
			if !testExists(t, name) {
				t.Errorf("%s: x-posedge-tested-in names %s, which is no test of this package", key, name)
			}
			continue
		}
		for code := range op.Responses.Codes.KeysFromOldest() {
			if _, ok := notProvoked[code]; ok {
				continue
			}
			if !x.covered[key+" "+code] {
				missing = append(missing, key+" "+code)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("described but never answered in this test:\n  %s", strings.Join(missing, "\n  "))
	}
}

func sha(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:])
}
