package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// A price set at HQ (posedge-hq's admin API) is at the till (posedge's
// terminal API) within 2 s; a store entry beats _all; deactivated, the
// item is unknown to lookups and sales.
func TestCatalogPriceReachesTill(t *testing.T) {
	// Loose limits: the till polls faster than the scan limit allows, and
	// a 429 is not a price.
	s := startStore(t, testenv.StoreOptions{Terminals: 1, Limits: looseMix})
	put := func(barcode string, body map[string]any) {
		t.Helper()
		r := s.DoHQ("", "PUT", "/admin/v1/catalog/"+barcode, body)
		if r.Status != 200 {
			t.Fatalf("HQ PUT %s: %d %s %v", barcode, r.Status, r.Body, r.Err)
		}
	}
	// within waits at most d for the till to see price for barcode.
	within := func(barcode string, price float64, d time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			r := s.T("T01", "GET", "/v1/items/"+barcode, nil, nil)
			if r.Status == 200 && r.JSON()["price_cents"] == price {
				return time.Since(start)
			}
			if time.Since(start) > d {
				t.Fatalf("GET /v1/items/%s after %v: %d %s, want price %v", barcode, d, r.Status, r.Body, price)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The first entry also waits for the daemon's first watch (up to its
	// retry after the bucket appears); later ones are held to 2 s.
	put("C1", map[string]any{"name": "Coffee", "price_cents": 450})
	within("C1", 450, 60*time.Second)
	for i, price := range []int{460, 470, 480} {
		put("C1", map[string]any{"name": "Coffee", "price_cents": price})
		t.Logf("price change %d at the till after %v", i, within("C1", float64(price), 2*time.Second).Round(time.Millisecond))
	}
	put("C1", map[string]any{"name": "Coffee here", "price_cents": 399, "store_id": s.StoreID})
	within("C1", 399, 2*time.Second)
	put("C1", map[string]any{"name": "Coffee", "price_cents": 500})
	// A later _all change reaching the till proves the one before it was
	// seen too (changes arrive in the bucket's order), where a sleep would
	// pass whenever the change was merely slow.
	put("C9", map[string]any{"name": "Marker", "price_cents": 1})
	within("C9", 1, 2*time.Second)
	if r := s.T("T01", "GET", "/v1/items/C1", nil, nil); r.JSON()["price_cents"] != 399.0 {
		t.Errorf("after an _all change under the store's entry: %s, want 399", r.Body)
	}

	r := s.DoHQ("", "DELETE", fmt.Sprintf("/admin/v1/catalog/C1?store_id=%s", s.StoreID), nil)
	if r.Status != 200 {
		t.Fatalf("HQ DELETE: %d %s", r.Status, r.Body)
	}
	testenv.WaitFor(t, 2*time.Second, "C1 unknown to the till", func() bool {
		return s.T("T01", "GET", "/v1/items/C1", nil, nil).Status == 404
	})
	if r := s.T("T01", "GET", "/v1/items/C1", nil, nil); r.Code() != "item_not_found" {
		t.Errorf("lookup of an inactive item: %d %s", r.Status, r.Body)
	}
	if r := s.Sale("T01", "k1", "C1", 1, 399); r.Status != 422 || r.Code() != "unknown_item" {
		t.Errorf("sale of an inactive item: %d %s, want 422 unknown_item", r.Status, r.Body)
	}

	// posedge killed while HQ changes a price twice: once restarted it
	// shows the newest, resumed from the journal's revision (no reload).
	s.Edge.Kill()
	put("C2", map[string]any{"name": "Cake", "price_cents": 300})
	put("C2", map[string]any{"name": "Cake", "price_cents": 320})
	s.StartEdge()
	t.Logf("after the restart, the newest price at the till in %v", within("C2", 320, 10*time.Second).Round(time.Millisecond))
	if m := s.Admin("GET", "/metrics", nil); !strings.Contains(string(m.Body), "posedge_catalog_reloads_total 0") {
		t.Errorf("the restarted daemon reloaded the catalog instead of resuming:\n%s", grepLines(string(m.Body), "posedge_catalog_"))
	}

	// posedge status --json: the catalog object. The till can see the
	// newest price a moment before the watch reports itself caught up (the
	// catch-up applies each change, then sets watching), so the status is
	// waited for, not read once.
	testenv.WaitForState(t, 5*time.Second, "the status's catalog object watching, revision ≥ 7, applied_at set", func() (bool, string) {
		st := s.Admin("GET", "/admin/v1/status", nil).JSON()
		c, _ := st["catalog"].(map[string]any)
		rev, _ := c["revision"].(float64)
		return c != nil && c["watching"] == true && rev >= 7 && c["applied_at"] != nil, fmt.Sprint(st["catalog"])
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Redis loses everything (FLUSHALL on the master, which the replicas
// follow) after HQ deactivated an item and changed a price, both applied
// long before — the journal's copy says an hour. The daemon notices and
// repairs Redis from the journal by itself: the deactivated item is still
// refused at the till, the price is HQ's, the stock is what was received
// minus what was sold; the reconciliation afterwards finds nothing to do.
func TestCatalogRestoredAfterRedisLoss(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Terminals: 1, Limits: loose})
	hq := "http://" + s.HQAdmin
	put := func(barcode string, body map[string]any) {
		t.Helper()
		if r := s.Do(hq, "", "PUT", "/admin/v1/catalog/"+barcode, body, nil); r.Status != 200 {
			t.Fatalf("HQ PUT %s: %d %s %v", barcode, r.Status, r.Body, r.Err)
		}
	}
	item := func(barcode string) testenv.Resp { return s.T("T01", "GET", "/v1/items/"+barcode, nil, nil) }
	put("D1", map[string]any{"name": "Donut", "price_cents": 250})
	put("D2", map[string]any{"name": "Danish", "price_cents": 300})
	testenv.WaitFor(t, 60*time.Second, "both items at the till", func() bool {
		return item("D1").Status == 200 && item("D2").Status == 200
	})
	for _, b := range []string{"D1", "D2"} {
		if r := s.Admin("POST", "/admin/v1/items/"+b+"/stock-adjustments",
			map[string]any{"delta": 10, "reason": "receiving", "idempotency_key": "grn-" + b}); r.Status != 201 {
			t.Fatalf("receive %s: %d %s", b, r.Status, r.Body)
		}
	}
	if r := s.Sale("T01", "k1", "D2", 3, 300); r.Status != 201 {
		t.Fatalf("sale: %d %s", r.Status, r.Body)
	}
	put("D2", map[string]any{"name": "Danish", "price_cents": 330})
	if r := s.Do(hq, "", "DELETE", "/admin/v1/catalog/D1", nil, nil); r.Status != 200 {
		t.Fatalf("HQ DELETE: %d %s", r.Status, r.Body)
	}
	testenv.WaitFor(t, 2*time.Second, "D1 off the till and D2 at 330", func() bool {
		return item("D1").Status == 404 && item("D2").JSON()["price_cents"] == 330.0
	})

	// The till read Redis; the journal's copy is written just after it
	// (then the watch's revision moves): killed between the two, the
	// journal still held D1 active, the repair below restored it so and
	// the test read it before the resumed watch applied revision 4 again
	// (seen once, 2026-12-06). Wait for the journal too.
	testenv.WaitFor(t, 5*time.Second, "the catalog journaled through revision 4", func() bool {
		return metric(t, s, "posedge_catalog_revision") >= 4
	})
	// The changes were applied long ago, as far as the journal can tell.
	s.Edge.Kill()
	old := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)
	if n := execJournal(t, s, `UPDATE catalog SET applied_at = '`+old+`'`); n != 2 {
		t.Fatalf("%d catalog rows aged, want 2", n)
	}
	s.StartEdge()
	if err := s.Redis.Master().FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testenv.WaitFor(t, 10*time.Second, "D2 back at the till", func() bool { return item("D2").Status == 200 })
	t.Logf("items back at the till %v after the FLUSHALL", time.Since(start).Round(time.Millisecond))
	if r := item("D2").JSON(); r["price_cents"] != 330.0 || r["stock"] != 7.0 || r["name"] != "Danish" {
		t.Errorf("D2 after the loss: %v, want Danish at HQ's 330 with stock 10−3", r)
	}
	if r := item("D1"); r.Status != 404 || r.Code() != "item_not_found" {
		t.Errorf("lookup of D1 (deactivated at HQ) after the loss: %d %s, want 404 item_not_found", r.Status, r.Body)
	}
	if r := s.Sale("T01", "k2", "D1", 1, 250); r.Status != 422 || r.Code() != "unknown_item" {
		t.Errorf("sale of D1 after the loss: %d %s, want 422 unknown_item", r.Status, r.Body)
	}
	if r := s.Admin("POST", "/admin/v1/items/D1/stock-adjustments",
		map[string]any{"delta": -1, "reason": "damage", "idempotency_key": "dmg-D1"}); r.Status != 201 || r.JSON()["stock"] != 9.0 {
		t.Errorf("adjustment of inactive D1 after the loss: %d %s, want 201 with stock 9", r.Status, r.Body)
	}
	if !strings.Contains(s.Edge.Tail(20000), "FLUSHALL") {
		t.Errorf("no log line of the repair after the FLUSHALL:\n%s", s.Edge.Tail(3000))
	}
}
