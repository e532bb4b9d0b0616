package api

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv/fakeclock"
)

// One till's batch flood stops at its byte quota (issue 22 finding 6: 50
// batches of ~1 MB a minute were accepted, each kept 48 h in Redis): 429
// terminal_bytes_exceeded with Retry-After, nothing more stored in Redis,
// another till unaffected, the till served again once the window ends.
func TestTerminalByteQuotaStopsABatchFlood(t *testing.T) {
	clock := fakeclock.New()
	const limit = 64 << 10
	e := newEnv(t, envOpts{quota: NewByteQuota(limit, time.Hour, clock.Now, nil)})
	e.putItem("X", 1, 1_000_000)
	batch := func(n int) map[string]any {
		var sales []map[string]any
		for i := range 40 {
			sales = append(sales, map[string]any{"idempotency_key": fmt.Sprintf("flood-%d-%d", n, i),
				"lines": []map[string]any{{"barcode": "X", "qty": 1, "price_cents": 1}}, "total_cents": 1, "tender": "cash",
				"cashier_id": strings.Repeat("c", 40)})
		}
		return map[string]any{"sales": sales}
	}
	sent, n := 0, 0
	var denied resp
	for ; n < 100; n++ {
		r := e.T("T01", "POST", "/v1/sales/batch", batch(n), nil)
		if r.status == 429 {
			denied = r
			break
		}
		if r.status != 200 {
			t.Fatalf("batch %d: %d %s", n, r.status, r.body)
		}
		sent++
	}
	if denied.status != 429 || denied.code() != "terminal_bytes_exceeded" || denied.header.Get("Retry-After") == "" {
		t.Fatalf("after %d batches: %d %v %s", sent, denied.status, denied.header, denied.body)
	}
	if sent == 0 || sent > limit/(40*100) {
		t.Fatalf("%d batches accepted under a %d-byte quota", sent, limit)
	}
	// Small sales may still fit what the last batch left: spend it.
	for i := 0; ; i++ {
		r := e.sale("T01", fmt.Sprintf("fill-%d", i), sale1("X", 1, 1))
		if r.status == 429 {
			break
		}
		if r.status != 201 || i > 100 {
			t.Fatalf("sale %d filling the quota: %d %s", i, r.status, r.body)
		}
	}
	records := func() int {
		keys, err := e.rdb.Keys(t.Context(), "*idem:T01:*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	before := records()
	for i := range 5 {
		if r := e.T("T01", "POST", "/v1/sales/batch", batch(1000+i), nil); r.status != 429 {
			t.Fatalf("batch over the quota: %d", r.status)
		}
		if r := e.sale("T01", fmt.Sprintf("over-%d", i), sale1("X", 1, 1)); r.status != 429 || r.code() != "terminal_bytes_exceeded" {
			t.Fatalf("sale over the quota: %d %s", r.status, r.body)
		}
	}
	if got := records(); got != before {
		t.Fatalf("Redis idempotency records of T01 grew from %d to %d while over its quota", before, got)
	}
	if r := e.sale("T02", "t02-own", sale1("X", 1, 1)); r.status != 201 {
		t.Fatalf("another till's sale: %d %s", r.status, r.body)
	}
	clock.Advance(time.Hour)
	if r := e.sale("T01", "next-window", sale1("X", 1, 1)); r.status != 201 {
		t.Fatalf("T01 in the next window: %d %s", r.status, r.body)
	}
}
