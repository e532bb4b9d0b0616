package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// told is one sale a terminal was answered 201 for.
type told struct {
	term, key, flow string
	qty, cents      int64
}

// tills runs n terminals selling item barcode (price cents) until stop is
// closed. Like real tills, each retries an unanswered or failed request
// with the same Idempotency-Key until it gets an answer it can act on;
// a refusal other than "in progress" fails the test.
type tills struct {
	mu      sync.Mutex
	told    []told
	retries int
	wg      sync.WaitGroup
}

func runTills(t *testing.T, ctx context.Context, s *testenv.Store, n int, barcode string, price int64) *tills {
	// Keys carry the test's name; a subtest's "/" is not a key character.
	return runTillsKeyed(t, ctx, s, n, strings.ReplaceAll(t.Name(), "/", "."), barcode, price)
}

// runTillsKeyed is runTills with keys of the given prefix.
func runTillsKeyed(t *testing.T, ctx context.Context, s *testenv.Store, n int, prefix, barcode string, price int64) *tills {
	tl := &tills{}
	// The tills stop before the test ends, even when it fails early: a
	// till logging after its test has completed would panic the package.
	ctx, stop := context.WithCancel(ctx)
	t.Cleanup(func() { stop(); tl.wg.Wait() })
	for i := 0; i < n; i++ {
		term := s.Terminals[i%len(s.Terminals)]
		tl.wg.Add(1)
		go func() {
			defer tl.wg.Done()
			for seq := 0; ctx.Err() == nil; seq++ {
				key := fmt.Sprintf("%s-%s-%d", prefix, term, seq)
				qty := int64(seq%3 + 1)
				for attempt := 0; ; attempt++ {
					r := s.Sale(term, key, barcode, qty, price)
					if r.Status == 201 {
						tl.mu.Lock()
						tl.told = append(tl.told, told{term, key, r.Flow(), qty, qty * price})
						tl.retries += attempt
						tl.mu.Unlock()
						break
					}
					if r.Err == nil && r.Status != 409 && r.Status < 500 && r.Status != 429 {
						t.Errorf("%s key %s: %d %s", term, key, r.Status, r.Body)
						return
					}
					if attempt > 600 {
						t.Errorf("%s key %s never answered: %d %s %v", term, key, r.Status, r.Body, r.Err)
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	return tl
}

func (tl *tills) wait() []told {
	tl.wg.Wait()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]told(nil), tl.told...)
}

// checkTold proves nothing was lost or doubled: every sale a terminal was
// told of is in the journal once and at HQ once, flow numbers are unique,
// and Redis's stock and the day's counters match exactly what the
// terminals were told.
func checkTold(t *testing.T, s *testenv.Store, got []told, barcode string, initialStock int64) {
	t.Helper()
	if len(got) == 0 {
		t.Fatal("no sale was answered at all")
	}
	flows := map[string]bool{}
	var qty, cents int64
	var want []string
	for _, g := range got {
		if flows[g.flow] {
			t.Fatalf("flow number %s answered twice", g.flow)
		}
		flows[g.flow] = true
		qty += g.qty
		cents += g.cents
		want = append(want, g.flow)
	}
	if n := s.JournalRows(""); n != len(got) {
		t.Errorf("journal holds %d transactions, terminals were told of %d", n, len(got))
	}
	for _, f := range want {
		if n := s.JournalRows("flow_no = ?", f); n != 1 {
			t.Fatalf("journal holds %s %d times", f, n)
		}
	}
	t0 := time.Now()
	hq := s.WaitHQ(want, 90*time.Second)
	t.Logf("%d sales (%d retries) at HQ after %v", len(got), 0, time.Since(t0))
	for f, n := range hq {
		if n != 1 {
			t.Fatalf("HQ holds %s %d times", f, n)
		}
		if !flows[f] {
			t.Fatalf("HQ holds %s, which no terminal was told of", f)
		}
	}
	// Redis converges once degraded sales are applied and repairs are done.
	testenv.WaitFor(t, 30*time.Second, "stock and counters to match what the terminals were told", func() bool {
		item := s.T(s.Terminals[0], "GET", "/v1/items/"+barcode, nil, nil)
		day := s.Admin("GET", "/admin/v1/stats/daily?date="+time.Now().UTC().Format("20060102"), nil)
		tot, _ := day.JSON()["totals"].(map[string]any)
		stock, _ := item.JSON()["stock"].(float64)
		ok := item.Status == 200 && item.JSON()["stale"] == false && int64(stock) == initialStock-qty &&
			tot != nil && int64(tot["sales"].(float64)) == int64(len(got)) && int64(tot["sales_cents"].(float64)) == cents
		if !ok {
			t.Logf("waiting: stock %v (want %d), totals %v (want %d sales, %d cents)", item.JSON()["stock"], initialStock-qty, tot, len(got), cents)
		}
		return ok
	})
}
