package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/apispec"
	"github.com/posedge/posedge/internal/moneycheck"
)

// fakeEdge is a minimal posedge terminal and admin API. It answers the
// first attempt of every sale with 503 after recording it (a lost
// answer), and the first sale of each terminal with 429 Retry-After: 1.
type fakeEdge struct {
	mu        sync.Mutex
	keys      map[string]string // bearer -> terminal
	items     map[string]int64
	sales     map[string]string // terminal/key -> body
	flows     map[string]string // terminal/key -> flow_no
	answers   map[string][]byte // terminal/key -> the 201 body
	totals    int64
	reused    int
	limitedAt map[string]time.Time // terminal -> when it got its 429
	waited    map[string]time.Duration
}

func (f *fakeEdge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if bc, ok := strings.CutPrefix(r.URL.Path, "/admin/v1/items/"); ok && r.Method == http.MethodPut {
		var it struct {
			PriceCents int64 `json:"price_cents"`
		}
		json.NewDecoder(r.Body).Decode(&it)
		f.items[bc] = it.PriceCents
		w.WriteHeader(http.StatusOK)
		return
	}
	term, ok := f.keys[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
		return
	}
	if bc, ok := strings.CutPrefix(r.URL.Path, "/v1/items/"); ok {
		p, ok := f.items[bc]
		if !ok {
			http.Error(w, `{"error":{"code":"item_not_found"}}`, http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"barcode":%q,"price_cents":%d,"stock":5,"stale":false}`, bc, p)
		return
	}
	if r.URL.Path != "/v1/sales" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	if at, ok := f.limitedAt[term]; !ok {
		f.limitedAt[term] = time.Now()
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":{"code":"rate_limited"}}`, http.StatusTooManyRequests)
		return
	} else if _, ok := f.waited[term]; !ok {
		f.waited[term] = time.Since(at)
	}
	body, _ := io.ReadAll(r.Body)
	var s struct {
		Lines []struct {
			Barcode    string `json:"barcode"`
			Qty        int64  `json:"qty"`
			PriceCents int64  `json:"price_cents"`
		} `json:"lines"`
		TotalCents int64  `json:"total_cents"`
		Tender     string `json:"tender"`
	}
	json.Unmarshal(body, &s)
	var sum int64
	for _, l := range s.Lines {
		sum += l.Qty * l.PriceCents
	}
	if sum != s.TotalCents {
		http.Error(w, `{"error":{"code":"total_mismatch"}}`, http.StatusBadRequest)
		return
	}
	k := term + "/" + r.Header.Get("Idempotency-Key")
	if prev, ok := f.sales[k]; ok {
		if prev != string(body) {
			f.reused++
			http.Error(w, `{"error":{"code":"idempotency_key_reused"}}`, http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusCreated)
		w.Write(f.answers[k])
		return
	}
	f.sales[k] = string(body)
	f.flows[k] = fmt.Sprint(len(f.flows) + 1)
	f.answers[k], _ = json.Marshal(map[string]any{"flow_no": f.flows[k], "terminal_id": term, "kind": "sale",
		"total_cents": s.TotalCents, "tender": s.Tender, "lines": s.Lines})
	f.totals += s.TotalCents
	http.Error(w, `{"error":{"code":"internal"}}`, http.StatusServiceUnavailable)
}

func TestRunCountsEachSaleOnce(t *testing.T) {
	f := &fakeEdge{keys: map[string]string{"k1": "T01", "k2": "T02"}, items: map[string]int64{},
		sales: map[string]string{}, flows: map[string]string{}, answers: map[string][]byte{},
		limitedAt: map[string]time.Time{}, waited: map[string]time.Duration{}}
	srv := httptest.NewServer(f)
	defer srv.Close()

	sum, err := Run(context.Background(), Config{
		URL: srv.URL, AdminURL: srv.URL, SeedItems: 5, Rate: 10, ReplayFraction: 1,
		Duration:  1500 * time.Millisecond,
		Terminals: []Terminal{{"T01", "k1"}, {"T02", "k2"}},
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.items) != 5 {
		t.Errorf("seeded %d items, want 5", len(f.items))
	}
	if sum.Sales == 0 || sum.Sales != len(f.sales) {
		t.Errorf("sim counted %d sales, server recorded %d", sum.Sales, len(f.sales))
	}
	if sum.TotalCents != f.totals {
		t.Errorf("sim total %d cents, server %d", sum.TotalCents, f.totals)
	}
	if f.reused != 0 {
		t.Errorf("%d retries changed the body under the same Idempotency-Key", f.reused)
	}
	if sum.Retries < sum.Sales {
		t.Errorf("retries = %d, want at least one per sale (%d): every first attempt got 503", sum.Retries, sum.Sales)
	}
	if sum.Replays != sum.Sales || sum.ReplayMismatch != 0 {
		t.Errorf("replays = %d (bad %d), want %d", sum.Replays, sum.ReplayMismatch, sum.Sales)
	}
	if sum.RateLimited != 2 {
		t.Errorf("rate limited = %d, want 2 (one per terminal)", sum.RateLimited)
	}
	for term, d := range f.waited {
		if d < 900*time.Millisecond {
			t.Errorf("%s came back %v after a 429 with Retry-After: 1", term, d)
		}
	}
	if len(sum.Errors) != 0 {
		t.Errorf("errors: %v", sum.Errors)
	}
}

func TestParseKeys(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"T01=a,T02=b", 2, true},
		{"T01=a", 1, true},
		{"", 0, false},
		{"T01", 0, false},
		{"T01=a,=b", 0, false},
	} {
		ts, err := parseKeys(tc.in)
		if (err == nil) != tc.ok || len(ts) != tc.want {
			t.Errorf("parseKeys(%q) = %v, %v", tc.in, ts, err)
		}
	}
}

// The routes the simulator counts by are operations of the description
// its client is generated from.
func TestRoutesAreDescribedOperations(t *testing.T) {
	spec, err := apispec.LoadFromModule(apispec.File)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range []string{routeGetItem, routePaymentToken, routeSale, routeRefund, routeBatch, routePutItem} {
		if _, ok := spec.Ops[rt]; !ok {
			t.Errorf("%q is not an operation of %s", rt, apispec.File)
		}
	}
}

func TestRunRejectsBadLoadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--keys", "T01=k", "--scans", "0-3"},
		{"--keys", "T01=k", "--scans", "5-2"},
		{"--keys", "T01=k", "--scans", "x"},
		{"--keys", "T01=k", "--tokens", "1.5"},
		{"--keys", "T01=k", "--refunds", "-0.1"},
		{"--keys", "T01=k", "--batch-size", "101"},
	} {
		if err := run(context.Background(), args, io.Discard); err == nil {
			t.Errorf("run %v: no error", args)
		}
	}
}

// --history records each sale's intent and final answer; `posedge-sim
// check` passes that history and fails one whose answer was changed.
func TestHistoryIsChecked(t *testing.T) {
	f := &fakeEdge{keys: map[string]string{"k1": "T01", "k2": "T02"}, items: map[string]int64{},
		sales: map[string]string{}, flows: map[string]string{}, answers: map[string][]byte{},
		limitedAt: map[string]time.Time{}, waited: map[string]time.Duration{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	hist := &moneycheck.History{}
	sum, err := Run(context.Background(), Config{
		URL: srv.URL, AdminURL: srv.URL, SeedItems: 5, Rate: 20, ReplayFraction: 1,
		Duration: 1500 * time.Millisecond, Terminals: []Terminal{{"T01", "k1"}, {"T02", "k2"}}, History: hist,
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ops := hist.Ops()
	if len(ops) < sum.Sales || sum.Sales == 0 {
		t.Fatalf("history holds %d requests for %d sales", len(ops), sum.Sales)
	}
	path := filepath.Join(t.TempDir(), "history.json")
	if err := writeHistory(path, ops); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := runCheck([]string{path}, &out); err != nil {
		t.Fatalf("check of a good history: %v\n%s", err, &out)
	}
	t.Log(strings.TrimSpace(out.String()))
	// A till told one total and billed another: the checker must say so.
	for i := range ops {
		if ops[i].Status == http.StatusCreated {
			ops[i].TotalCents++
			break
		}
	}
	if err := writeHistory(path, ops); err != nil {
		t.Fatal(err)
	}
	if err := runCheck([]string{path}, io.Discard); err == nil || !strings.Contains(err.Error(), "total") {
		t.Fatalf("check of a history with a wrong total: %v, want a total mismatch", err)
	}
}
