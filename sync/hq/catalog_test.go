package hq_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/cents"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/apispec"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
)

func newCatalog(t *testing.T) (*hq.Catalog, jetstream.KeyValue, hq.Config) {
	t.Helper()
	n := testenv.StartNATS(t)
	_, js := connect(t, n.URL())
	cfg := testConfig(n.URL(), "sqlite://unused.db")
	cat := hq.NewCatalog(cfg, js)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := cat.Bucket(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cat, kv, cfg
}

func kvItem(t *testing.T, kv jetstream.KeyValue, key string) (hq.CatalogItem, uint64) {
	t.Helper()
	e, err := kv.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	var it hq.CatalogItem
	if err := json.Unmarshal(e.Value(), &it); err != nil {
		t.Fatalf("value of %s: %v", key, err)
	}
	return it, e.Revision()
}

// apiCheck holds the tests' exchanges with posedge-hq's admin handlers to
// docs/openapi-hq.yaml (loaded once for the package's tests).
var apiCheck = sync.OnceValues(testenv.NewAPICheck)

// hqClient is an HTTP client whose exchanges with posedge-hq's admin
// listener are checked against docs/openapi-hq.yaml.
func hqClient(t *testing.T) *http.Client {
	t.Helper()
	api, err := apiCheck()
	if err != nil {
		t.Fatal(err)
	}
	return api.Client(t, apispec.HQ)
}

// do serves one request with h; the request and the answer are checked
// against docs/openapi-hq.yaml.
func do(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	return serve(t, false, h, method, path, body)
}

// doInvalid is do for a request meant to break the description: the
// description must reject it and h answer 4xx.
func doInvalid(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	return serve(t, true, h, method, path, body)
}

func serve(t *testing.T, invalid bool, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	api, err := apiCheck()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	h.ServeHTTP(rec, req)
	api.Exchange(t, apispec.HQ, invalid, req, []byte(body), rec.Result(), rec.Body.Bytes())
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: answer %q is not JSON: %v", method, path, rec.Body.String(), err)
	}
	return rec.Code, out
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// A method or path the catalog API does not have is a JSON not_found,
// as everywhere else on the admin listener.
func TestCatalogAdminUnknownRoutes(t *testing.T) {
	cat, _, cfg := newCatalog(t)
	h := hq.NewCatalogHandler(cat, cfg.MaxSaleCents, testLogger(t))
	tests := []struct{ method, path string }{
		{http.MethodGet, "/admin/v1/catalog/A1"},
		{http.MethodPost, "/admin/v1/catalog/A1"},
		{http.MethodPut, "/admin/v1/catalog/A1/extra"},
		{http.MethodPut, "/admin/v1/catalog/"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			status, out := doInvalid(t, h, tc.method, tc.path, "")
			if status != http.StatusNotFound || errCode(out) != "not_found" {
				t.Errorf("%s %s = %d %v, want 404 not_found", tc.method, tc.path, status, out)
			}
		})
	}
}

func TestCatalogAdminValidation(t *testing.T) {
	cat, kv, cfg := newCatalog(t)
	h := hq.NewCatalogHandler(cat, cfg.MaxSaleCents, testLogger(t))
	max := cfg.MaxSaleCents
	tests := []struct {
		name, path, body, code string
		// accepted: docs/openapi-hq.yaml accepts the request (JSON
		// Schema cannot see a duplicate key); only the server refuses it.
		accepted bool
	}{
		{"bad barcode", "/admin/v1/catalog/a*b", `{"name":"x","price_cents":1}`, "invalid_barcode", false},
		{"barcode too long", "/admin/v1/catalog/" + strings.Repeat("a", 65), `{"name":"x","price_cents":1}`, "invalid_barcode", false},
		{"fractional price", "/admin/v1/catalog/A1", `{"name":"x","price_cents":1.5}`, "invalid_amount", false},
		{"string price", "/admin/v1/catalog/A1", `{"name":"x","price_cents":"1"}`, "invalid_amount", false},
		{"negative price", "/admin/v1/catalog/A1", `{"name":"x","price_cents":-1}`, "invalid_amount", false},
		{"price above max_sale_cents", "/admin/v1/catalog/A1", fmt.Sprintf(`{"name":"x","price_cents":%d}`, max+1), "invalid_amount", false},
		{"missing price", "/admin/v1/catalog/A1", `{"name":"x"}`, "invalid_amount", false},
		{"missing name", "/admin/v1/catalog/A1", `{"price_cents":1}`, "invalid_name", false},
		{"unknown field", "/admin/v1/catalog/A1", `{"name":"x","price_cents":1,"stock":3}`, "unknown_field", false},
		{"field in another case", "/admin/v1/catalog/A1", `{"Name":"x","price_cents":1}`, "unknown_field", false},
		{"duplicate key", "/admin/v1/catalog/A1", `{"name":"x","price_cents":1,"price_cents":2}`, "invalid_json", true},
		{"trailing data", "/admin/v1/catalog/A1", `{"name":"x","price_cents":1} {}`, "invalid_json", false},
		{"not an object", "/admin/v1/catalog/A1", `[1]`, "invalid_json", false},
		{"active not a bool", "/admin/v1/catalog/A1", `{"name":"x","price_cents":1,"active":"no"}`, "invalid_json", false},
		{"store _all", "/admin/v1/catalog/A1", `{"name":"x","price_cents":1,"store_id":"_all"}`, "invalid_store_id", false},
		{"bad store", "/admin/v1/catalog/A1", `{"name":"x","price_cents":1,"store_id":"S 1"}`, "invalid_store_id", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			send := doInvalid
			if tc.accepted {
				send = do
			}
			status, out := send(t, h, http.MethodPut, tc.path, tc.body)
			if status != http.StatusBadRequest || errCode(out) != tc.code {
				t.Errorf("PUT %s %s = %d %v, want 400 %s", tc.path, tc.body, status, out, tc.code)
			}
		})
	}
	// Nothing refused reached the bucket.
	if _, err := kv.Get(context.Background(), "_all.A1"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("a refused PUT wrote _all.A1: %v", err)
	}
}

func TestCatalogAdminPutDelete(t *testing.T) {
	cat, kv, cfg := newCatalog(t)
	h := hq.NewCatalogHandler(cat, cfg.MaxSaleCents, testLogger(t))

	status, out := do(t, h, http.MethodPut, "/admin/v1/catalog/A1", `{"name":"Milk","price_cents":350,"active":true}`)
	if status != http.StatusOK || out["key"] != "_all.A1" {
		t.Fatalf("PUT = %d %v, want 200 key _all.A1", status, out)
	}
	rev1 := uint64(out["revision"].(float64))
	if it, rev := kvItem(t, kv, "_all.A1"); it != (hq.CatalogItem{Name: "Milk", PriceCents: 350, Active: true}) || rev != rev1 {
		t.Errorf("_all.A1 = %+v rev %d, want Milk 350 active rev %d", it, rev, rev1)
	}

	status, out = do(t, h, http.MethodPut, "/admin/v1/catalog/A1", `{"name":"Milk S1","price_cents":`+fmt.Sprint(cfg.MaxSaleCents)+`,"store_id":"S1"}`)
	if status != http.StatusOK || out["key"] != "S1.A1" {
		t.Fatalf("PUT store = %d %v, want 200 key S1.A1", status, out)
	}
	rev2 := uint64(out["revision"].(float64))
	if rev2 <= rev1 {
		t.Errorf("revision went from %d to %d", rev1, rev2)
	}
	if it, _ := kvItem(t, kv, "S1.A1"); !it.Active || it.PriceCents != cfg.MaxSaleCents {
		t.Errorf("S1.A1 = %+v, want active (the default) at max_sale_cents", it)
	}

	status, out = do(t, h, http.MethodDelete, "/admin/v1/catalog/A1?store_id=S1", "")
	if status != http.StatusOK || out["key"] != "S1.A1" {
		t.Fatalf("DELETE = %d %v", status, out)
	}
	if it, rev := kvItem(t, kv, "S1.A1"); it.Active || it.Name != "Milk S1" || rev != uint64(out["revision"].(float64)) {
		t.Errorf("after DELETE S1.A1 = %+v rev %d, want inactive, name kept, rev %v", it, rev, out["revision"])
	}
	if it, _ := kvItem(t, kv, "_all.A1"); !it.Active {
		t.Errorf("DELETE of S1.A1 touched _all.A1: %+v", it)
	}

	status, out = do(t, h, http.MethodDelete, "/admin/v1/catalog/NOPE", "")
	if status != http.StatusNotFound || errCode(out) != "item_not_found" {
		t.Errorf("DELETE unknown = %d %v, want 404 item_not_found", status, out)
	}
}

func TestParseCatalogCSV(t *testing.T) {
	tests := []struct {
		name, csv string
		rows      int
		err       string // substring; "" = ok
	}{
		{"header and rows", "barcode,name,price_cents,active,store_id\nA1,Milk,350,true,\nA1,Milk,360,1,S1\n", 2, ""},
		{"no header, four columns", "A1,Milk,350,false\n", 1, ""},
		{"bad price names the line", "A1,Milk,350,true\nA2,Bread,3.5,true\n", 0, "line 2: price_cents"},
		{"negative price", "A1,Milk,-1,true\n", 0, "line 1: price_cents"},
		{"bad active", "barcode,name,price_cents,active\nA1,Milk,350,maybe\n", 0, "line 2: active"},
		{"bad barcode", "A 1,Milk,350,true\n", 0, "line 1: barcode"},
		{"too few fields", "A1,Milk,350\n", 0, "line 1: 3 fields"},
		{"key twice", "A1,Milk,350,true\nA1,Milk,351,true\n", 0, "line 2: key _all.A1 is already on line 1"},
		{"empty name", "A1,,350,true\n", 0, "line 1: name"},
		{"unterminated quote names the line", "A1,Milk,350,true\n\"0000", 0, "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := hq.ParseCatalogCSV(strings.NewReader(tc.csv), cents.DefaultMaxSaleCents)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err = %v, want one containing %q", err, tc.err)
			case len(rows) != tc.rows:
				t.Fatalf("%d rows, want %d", len(rows), tc.rows)
			}
		})
	}
}

func writeCSV(t *testing.T, dir, name string, lines []string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCatalogImport(t *testing.T) {
	_, kv, cfg := newCatalog(t)
	ctx := context.Background()
	dir := t.TempDir()
	lines := []string{"barcode,name,price_cents,active,store_id"}
	for i := range 200 {
		lines = append(lines, fmt.Sprintf("B%03d,Item %d,%d,true,", i, i, 100+i))
	}
	lines = append(lines, "B000,Item 0 for S1,99,true,S1")
	var progress bytes.Buffer
	s, err := hq.ImportCatalogFile(ctx, cfg, writeCSV(t, dir, "a.csv", lines), &progress, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Rows != 201 || s.Written != 201 || s.Unchanged != 0 {
		t.Errorf("first import = %+v, want 201 rows all written", s.ImportProgress)
	}
	if !strings.Contains(progress.String(), "201/201 rows, 201 written, 0 unchanged") {
		t.Errorf("progress = %q, want a final line with the counts", progress.String())
	}
	firstRev := s.LastRevision

	// The same list with two prices changed: two new revisions, the rest skipped.
	lines[4] = "B003,Item 3,999,true,"
	lines[201] = "B000,Item 0 for S1,98,false,S1"
	s, err = hq.ImportCatalogFile(ctx, cfg, writeCSV(t, dir, "b.csv", lines), io.Discard, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Written != 2 || s.Unchanged != 199 || s.LastRevision != firstRev+2 {
		t.Errorf("second import = %+v last rev %d, want 2 written 199 unchanged, last rev %d", s.ImportProgress, s.LastRevision, firstRev+2)
	}
	if it, _ := kvItem(t, kv, "_all.B003"); it.PriceCents != 999 {
		t.Errorf("_all.B003 = %+v, want 999", it)
	}
	if it, _ := kvItem(t, kv, "S1.B000"); it.Active || it.PriceCents != 98 {
		t.Errorf("S1.B000 = %+v, want inactive at 98", it)
	}

	// A malformed row anywhere: an error naming its line, nothing written.
	before := lastSeq(t, kv)
	bad := append([]string{}, lines...)
	bad[7] = "B006,Item 6,5,true,"
	bad[150] = "B149,Item 149,ten,true,"
	_, err = hq.ImportCatalogFile(ctx, cfg, writeCSV(t, dir, "c.csv", bad), io.Discard, testLogger(t))
	if err == nil || !strings.Contains(err.Error(), "line 151") {
		t.Fatalf("err = %v, want one naming line 151", err)
	}
	if after := lastSeq(t, kv); after != before {
		t.Errorf("a refused import wrote to the bucket")
	}
}

func lastSeq(t *testing.T, kv jetstream.KeyValue) uint64 {
	t.Helper()
	st, err := kv.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.(*jetstream.KeyValueBucketStatus).StreamInfo().State.LastSeq
}

// NATS down: a catalog write answers 503 within its bound, not never.
func TestCatalogAdminNATSDown(t *testing.T) {
	n := testenv.StartNATS(t)
	nc, js := connect(t, n.URL())
	cfg := testConfig(n.URL(), "sqlite://unused.db")
	h := hq.NewCatalogHandler(hq.NewCatalog(cfg, js), cfg.MaxSaleCents, testLogger(t))
	n.Stop()
	testenv.WaitFor(t, waitLong, "client disconnected", func() bool { return !nc.IsConnected() })
	start := time.Now()
	status, out := do(t, h, http.MethodPut, "/admin/v1/catalog/A1", `{"name":"Milk","price_cents":350}`)
	if status != http.StatusServiceUnavailable || errCode(out) != "nats_unavailable" {
		t.Errorf("PUT with NATS down = %d %v, want 503 nats_unavailable", status, out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("PUT with NATS down took %v", d)
	}
}
