package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/ratelimit"
	"github.com/posedge/posedge/internal/apispec"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// apiEnv is the terminal and admin APIs in-process over a real Redis and a
// real journal file.
type apiEnv struct {
	t        testing.TB
	redis    *testenv.Redis
	rdb      redis.UniversalClient
	j        *journal.Journal
	ledger   *ledger.Ledger
	term     *httptest.Server
	adminSrv *httptest.Server
	keys     map[string]string // terminal → key
	// check holds every exchange to docs/openapi.yaml (not in
	// benchmarks): the request, unless meantInvalid, and the answer.
	check *testenv.APICheck
	// meantInvalid marks the requests of an env returned by Invalid: the
	// description must reject them and the server answer 4xx.
	meantInvalid bool
}

type envOpts struct {
	limits   *ratelimit.Config
	sentinel bool
	quota    *ByteQuota // limits.terminal_bytes; nil: none
}

func newEnv(t testing.TB, o envOpts) *apiEnv {
	t.Helper()
	e := &apiEnv{t: t, keys: map[string]string{}}
	ctx := context.Background()
	if o.sentinel {
		e.redis = testenv.StartRedis(t, testenv.RedisOptions{})
		e.rdb = e.redis.Master()
	} else {
		e.redis = testenv.StartRedisSingle(t)
		e.rdb = e.redis.NodeClient(0)
	}
	var err error
	e.j, err = journal.Open(ctx, filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.j.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	ack := 0
	if o.sentinel {
		ack = 1
	}
	e.ledger, err = ledger.New(ctx, ledger.Config{StoreID: "S1", RedisTimeout: time.Second, MinReplicasAck: ack}, e.rdb, e.j, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	lc := ratelimit.Config{StoreID: "S1", Store: ratelimit.Policy{Limit: 100000, Window: time.Second},
		Terminal: ratelimit.Policy{Limit: 100000, Window: time.Second},
		Actions: map[string]ratelimit.Policy{"scan": {Limit: 100000, Window: time.Second}, "pay": {Limit: 100000, Window: time.Second},
			"refund": {Limit: 100000, Window: time.Second}, "sync": {Limit: 100000, Window: time.Second}},
		FallbackFraction: 0.5, RedisTimeout: time.Second}
	if o.limits != nil {
		lc = *o.limits
	}
	lim, err := ratelimit.New(e.rdb, lc, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[string]string{}
	for _, id := range []string{"T01", "T02"} {
		key := "key-of-" + id
		sum := sha256.Sum256([]byte(key))
		hashes[hex.EncodeToString(sum[:])] = id
		e.keys[id] = key
	}
	hm := NewHTTPMetrics(reg)
	e.term = httptest.NewServer(NewTerminal(TerminalDeps{Keys: hashes, Ledger: e.ledger, Limiter: lim, HTTP: hm,
		Guard: ratelimit.NewAuthGuard(10, time.Minute, time.Now), Log: log, Seen: NewLastSeen(), Quota: o.quota}))
	t.Cleanup(e.term.Close)
	e.adminSrv = httptest.NewServer(NewAdmin(AdminDeps{Ledger: e.ledger, Limiter: lim, Log: log, HTTP: hm,
		Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Ready:   func(context.Context) error { return nil }, Status: func(context.Context) any { return map[string]string{} }}))
	t.Cleanup(e.adminSrv.Close)
	if _, bench := t.(*testing.B); !bench {
		e.check = apiCheck(t)
	}
	return e
}

// Invalid is e for requests the test means to break the description (a
// bad barcode, a missing key, malformed JSON...): each one must be
// rejected by the description and answered 4xx.
func (e *apiEnv) Invalid() *apiEnv { return e.InvalidIf(true) }

// InvalidIf is Invalid when meant is (a table row's mark), else e.
func (e *apiEnv) InvalidIf(meant bool) *apiEnv {
	if !meant {
		return e
	}
	c := *e
	c.meantInvalid = true
	return &c
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.body, &m)
	return m
}

func (r resp) code() string {
	if e, ok := r.json()["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

func (r resp) flow() string { s, _ := r.json()["flow_no"].(string); return s }

func (e *apiEnv) do(base, auth, method, path string, body any, hdr map[string]string) resp {
	e.t.Helper()
	var reqBody []byte
	switch b := body.(type) {
	case nil:
	case string:
		reqBody = []byte(b)
	case []byte:
		reqBody = b
	default:
		reqBody, _ = json.Marshal(b)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(reqBody)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json") // as a till sends it (hdr may say otherwise)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if e.check != nil {
		listener := apispec.Admin
		if base == e.term.URL {
			listener = apispec.Terminal
		}
		e.check.Exchange(e.t, listener, e.meantInvalid, req, reqBody, res, b)
	}
	return resp{res.StatusCode, res.Header, b}
}

func (e *apiEnv) T(term, method, path string, body any, hdr map[string]string) resp {
	e.t.Helper()
	return e.do(e.term.URL, e.keys[term], method, path, body, hdr)
}

func (e *apiEnv) sale(term, key string, body any) resp {
	e.t.Helper()
	return e.T(term, "POST", "/v1/sales", body, map[string]string{"Idempotency-Key": key})
}

func (e *apiEnv) admin(method, path string, body any) resp {
	e.t.Helper()
	return e.do(e.adminSrv.URL, "", method, path, body, nil)
}

func (e *apiEnv) putItem(barcode string, price, stock int64) {
	e.t.Helper()
	if r := e.admin("PUT", "/admin/v1/items/"+barcode, map[string]any{"name": "n " + barcode, "price_cents": price, "stock": stock}); r.status != 200 {
		e.t.Fatalf("put item: %d %s", r.status, r.body)
	}
}

func (e *apiEnv) stock(barcode string) int64 {
	e.t.Helper()
	r := e.T("T01", "GET", "/v1/items/"+barcode, nil, nil)
	if r.status != 200 {
		e.t.Fatalf("get item: %d %s", r.status, r.body)
	}
	return int64(r.json()["stock"].(float64))
}

func (e *apiEnv) daily() map[string]any {
	r := e.admin("GET", "/admin/v1/stats/daily", nil)
	if r.status != 200 {
		e.t.Fatalf("daily: %d %s", r.status, r.body)
	}
	return r.json()
}

func sale1(barcode string, qty, price int64) map[string]any {
	return map[string]any{"lines": []map[string]any{{"barcode": barcode, "qty": qty, "price_cents": price}},
		"total_cents": qty * price, "tender": "cash"}
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}
