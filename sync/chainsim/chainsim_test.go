package chainsim

import (
	"context"
	"testing"
	"time"
)

func TestBuildFillsEachJournalWithADay(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	c, err := Build(ctx, Options{Stores: 3, Txns: 100, RefundEvery: 10, Terminals: 4, Day: day, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Txns() != 300 {
		t.Fatalf("Txns() = %d, want 300", c.Txns())
	}
	for _, s := range c.Stores {
		st, err := s.Journal.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != 100 || st.Backlog != 100 || s.Sales != 90 || s.Refunds != 10 || s.Day != "20261130" {
			t.Errorf("%s: rows %d backlog %d sales %d refunds %d day %s; want 100, 100, 90, 10, 20261130",
				s.ID, st.Rows, st.Backlog, s.Sales, s.Refunds, s.Day)
		}
	}
	if n, err := c.Manifests(ctx); err != nil || n != 3*4 {
		t.Errorf("Manifests() = %d, %v; want 12 (3 stores × 4 tills, one day)", n, err)
	}
	for n := 1; n <= 100; n++ {
		tx := c.txn("C00001", n, day.Add(10*time.Hour))
		if err := checkBody(tx.Body); err != nil {
			t.Fatalf("body of transaction %d: %v", n, err)
		}
		if (tx.Kind == "refund") != (n%10 == 0) {
			t.Fatalf("transaction %d is a %s", n, tx.Kind)
		}
	}
}
