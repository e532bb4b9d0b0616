package e2e

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// hqAdjustments reads HQ's stock_adjustments: adjustment_id → rows.
func hqAdjustments(t *testing.T, s *testenv.Store) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+s.HQDB+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT adjustment_id FROM stock_adjustments WHERE store_id = ?`, s.StoreID)
	if err != nil {
		return map[string]int{} // not created yet
	}
	defer rows.Close()
	got := map[string]int{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got[id]++
	}
	return got
}

// execJournal changes the journal file while the daemon is down.
func execJournal(t *testing.T, s *testenv.Store, q string) int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Dir, "journal.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(q)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := res.RowsAffected()
	return n
}

// Receiving goods while four tills sell the same item: the final stock
// is initial + received − sold, exactly; each adjustment reaches HQ and
// is stored once, also across a kill -9 of the daemon and a resend of
// every adjustment.
func TestStockAdjustmentsWithSales(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: loose})
	const initial, salesPerTill, receipts, perReceipt = 40, 15, 12, 5
	s.PutItem("R1", 200, initial)
	var wg sync.WaitGroup
	var mu sync.Mutex
	sold := 0
	for _, term := range s.Terminals {
		wg.Go(func() {
			for k := range salesPerTill {
				r := s.Sale(term, fmt.Sprintf("%s-s%d", term, k), "R1", 1, 200)
				switch {
				case r.Status == 201:
					mu.Lock()
					sold++
					mu.Unlock()
				case r.Code() != "insufficient_stock":
					t.Errorf("sale %s/%d: %d %s %v", term, k, r.Status, r.Body, r.Err)
				}
			}
		})
	}
	ids := make([]string, receipts)
	wg.Go(func() {
		for k := range receipts {
			r := s.Admin("POST", "/admin/v1/items/R1/stock-adjustments",
				map[string]any{"delta": perReceipt, "reason": "receiving", "idempotency_key": fmt.Sprintf("rcv-%d", k)})
			if r.Status != 201 {
				t.Errorf("adjustment %d: %d %s %v", k, r.Status, r.Body, r.Err)
				continue
			}
			ids[k], _ = r.JSON()["adjustment_id"].(string)
		}
	})
	wg.Wait()
	item := s.T("T01", "GET", "/v1/items/R1", nil, nil).JSON()
	if want := float64(initial + receipts*perReceipt - sold); item["stock"] != want {
		t.Fatalf("stock %v, want %d + %d − %d = %v", item["stock"], initial, receipts*perReceipt, sold, want)
	}
	waitAdjustments := func(what string) map[string]int {
		t.Helper()
		var got map[string]int
		testenv.WaitFor(t, 60*time.Second, what, func() bool {
			got = hqAdjustments(t, s)
			for _, id := range ids {
				if got[id] == 0 {
					return false
				}
			}
			return true
		})
		return got
	}
	got := waitAdjustments("HQ to hold every adjustment")

	// Killed, every adjustment marked unsent, restarted: all are sent
	// again and HQ still holds each once. A retry with a key answers the
	// same as before.
	s.Edge.Kill()
	if n := execJournal(t, s, `UPDATE stock_adjustments SET state = 'pending', acked_at = NULL`); n != receipts {
		t.Fatalf("%d journal rows marked unsent, want %d", n, receipts)
	}
	s.StartEdge()
	testenv.WaitFor(t, 60*time.Second, "the resend acknowledged", func() bool {
		var n int
		db, _ := sql.Open("sqlite", "file:"+filepath.Join(s.Dir, "journal.db")+"?mode=ro&_pragma=busy_timeout(5000)")
		defer db.Close()
		_ = db.QueryRow(`SELECT COUNT(*) FROM stock_adjustments WHERE state = 'pending'`).Scan(&n)
		return n == 0
	})
	got = waitAdjustments("HQ after the resend")
	if len(got) != receipts {
		t.Errorf("HQ holds %d adjustments, want %d", len(got), receipts)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("adjustment %s stored %d times", id, n)
		}
	}
	r := s.Admin("POST", "/admin/v1/items/R1/stock-adjustments",
		map[string]any{"delta": perReceipt, "reason": "receiving", "idempotency_key": "rcv-4"})
	if r.Status != 201 || r.JSON()["adjustment_id"] != ids[4] {
		t.Errorf("retry of rcv-4 after the restart: %d %s, want 201 with adjustment %s", r.Status, r.Body, ids[4])
	}
	if again := s.T("T01", "GET", "/v1/items/R1", nil, nil).JSON(); again["stock"] != item["stock"] {
		t.Errorf("stock %v after the restart and a retry, want %v", again["stock"], item["stock"])
	}
	// The reconciliation the restart runs counts the adjustments as the
	// journal holds them: nothing to correct, the goods received stay.
	var m string
	testenv.WaitFor(t, 30*time.Second, "the start's reconciliation done", func() bool {
		m = string(s.Admin("GET", "/metrics", nil).Body)
		return !strings.Contains(m, `posedge_reconcile_runs_total{result="clean"} 0`) ||
			!strings.Contains(m, `posedge_reconcile_runs_total{result="corrected"} 0`)
	})
	if !strings.Contains(m, `posedge_reconcile_differences_total{kind="stock"} 0`) {
		t.Errorf("the reconciliation took adjustments for differences:\n%s", grepLines(m, "posedge_reconcile_"))
	}
	if again := s.T("T01", "GET", "/v1/items/R1", nil, nil).JSON(); again["stock"] != item["stock"] {
		t.Errorf("stock %v after the reconciliation, want %v", again["stock"], item["stock"])
	}
}
