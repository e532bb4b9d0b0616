package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// 600 sales of odd cent amounts from four tills add up exactly in the
// daily stats and at HQ, and every one is at HQ once.
func TestOddCentsAddUpAtHQ(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: loose})
	prices := []int64{1, 3, 7, 33, 99, 101, 1999, 12345}
	for _, p := range prices {
		s.PutItem(fmt.Sprintf("C%d", p), p, plenty)
	}
	var mu sync.Mutex
	var flows []string
	var want int64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < 600; i += 4 {
				p := prices[i%len(prices)]
				qty := int64(i%3 + 1)
				r := s.Sale(s.Terminals[w], fmt.Sprintf("cents-%d", i), fmt.Sprintf("C%d", p), qty, p)
				if r.Status != 201 {
					t.Errorf("sale %d: %d %s %v", i, r.Status, r.Body, r.Err)
					return
				}
				mu.Lock()
				flows = append(flows, r.Flow())
				want += qty * p
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got := s.WaitHQ(flows, 60*time.Second)
	_, sum := s.HQRows()
	if len(got) != 600 || sum != want {
		t.Fatalf("HQ holds %d transactions worth %d cents; want 600 worth %d", len(got), sum, want)
	}
	day := s.Admin("GET", "/admin/v1/stats/daily?date="+time.Now().UTC().Format("20060102"), nil).JSON()
	tot := day["totals"].(map[string]any)
	if int64(tot["sales"].(float64)) != 600 || int64(tot["sales_cents"].(float64)) != want {
		t.Fatalf("daily totals %v, want 600 sales worth %d", tot, want)
	}
}
