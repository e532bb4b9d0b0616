package e2e

import (
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
	s := startStore(t, testenv.StoreOptions{Terminals: 1})
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
	time.Sleep(500 * time.Millisecond)
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

	// posedge status --json: the catalog object.
	st := s.Admin("GET", "/admin/v1/status", nil).JSON()
	c, _ := st["catalog"].(map[string]any)
	if c == nil || c["watching"] != true || c["revision"].(float64) < 7 || c["applied_at"] == nil {
		t.Errorf("status catalog object %v, want watching, revision ≥ 7, applied_at set", st["catalog"])
	}
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
