package e2e

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/moneycheck"
	"github.com/posedge/posedge/internal/testenv"
)

// TestScarceStockRace: four tills race for an item with stock 5, one unit
// a sale, each until told 409 insufficient_stock; then, with every Redis
// node frozen (degraded mode, stock not enforced), each sells two more.
// moneycheck decides from the tills' history, HQ's rows and Redis's stock:
// no normal-mode sale oversold the item, the degraded ones may have, and
// the stock is what the history says (5 − 5 − 8 = −8).
func TestScarceStockRace(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	s.PutItem("SC", 100, 5)
	var hist moneycheck.History
	sell := func(term, key string) int {
		body := testenv.SaleBody("SC", 1, 100)
		for attempt := 0; attempt < 200; attempt++ {
			r := s.Sale(term, key, "SC", 1, 100)
			hist.Add(moneycheck.Op{Terminal: term, Kind: "sale", Key: key, Lines: []moneycheck.Line{{Barcode: "SC", Qty: 1, PriceCents: 100}},
				TotalCents: body["total_cents"].(int64), Tender: "cash", Status: r.Status, Body: r.Body, At: time.Now()})
			if r.Status == 201 || r.Status == 409 && !jsonHas(r.Body, "request_in_progress") {
				return r.Status
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("%s %s: no answer to act on", term, key)
		return 0
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	told, refused := 0, 0
	for _, term := range s.Terminals[:4] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				st := sell(term, fmt.Sprintf("sc-%s-%d", term, i))
				mu.Lock()
				if st == 201 {
					told++
				} else {
					refused++
				}
				mu.Unlock()
				if st != 201 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if told != 5 || refused != 4 {
		t.Fatalf("the race: %d sales told 201 and %d refused, want 5 and 4 (stock 5)", told, refused)
	}
	s.Redis.StopAll()
	for _, term := range s.Terminals[:4] {
		for i := 0; i < 2; i++ {
			if st := sell(term, fmt.Sprintf("scd-%s-%d", term, i)); st != 201 {
				t.Fatalf("degraded sale %s %d: %d, want 201 (stock not enforced)", term, i, st)
			}
		}
	}
	s.Redis.ContAll()
	var flows []string
	for _, op := range hist.Ops() {
		var a struct {
			FlowNo string `json:"flow_no"`
		}
		if op.Status == 201 && json.Unmarshal(op.Body, &a) == nil {
			flows = append(flows, a.FlowNo)
		}
	}
	s.WaitHQ(flows, 30*time.Second)
	var stock int64
	testenv.WaitForState(t, 30*time.Second, "the degraded sales applied", func() (bool, string) {
		r := s.T(s.Terminals[0], "GET", "/v1/items/SC", nil, nil)
		stock = num(r.JSON()["stock"])
		return r.Status == 200 && r.JSON()["stale"] == false && stock == -8, fmt.Sprintf("%d %s", r.Status, r.Body)
	})
	w := moneycheck.World{InitialStock: map[string]int64{"SC": 5}, FinalStock: map[string]int64{"SC": stock}, HQ: s.HQBodies()}
	rep, err := moneycheck.Check(hist.Ops(), w)
	t.Log(rep)
	if err != nil {
		t.Fatalf("moneycheck: %v", err)
	}
	// The check can fail here: with the degraded sales taken for normal
	// ones, the history oversells.
	w.Degraded = func(string) bool { return false }
	if _, err := moneycheck.Check(hist.Ops(), w); err == nil {
		t.Fatal("moneycheck passed the degraded sales as normal-mode ones that took stock to -8")
	}
}

func jsonHas(b []byte, code string) bool {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	return json.Unmarshal(b, &e) == nil && e.Error.Code == code
}
