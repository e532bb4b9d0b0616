package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// An undamaged journal with a row in every table salvages whole: every
// table of the schema is in salvageTables and each copies all its rows.
func TestSalvageCopiesEveryTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "journal.db")
	j, err := Open(ctx, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := 1; i <= 3; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"item", func() error {
			return j.PutItem(ctx, Item{Barcode: "A", Name: "a", PriceCents: 199, Stock: 5, UpdatedAt: now})
		}},
		{"catalog entry", func() error {
			return j.ApplyCatalog(ctx, &CatalogItem{Barcode: "B", Name: "b", PriceCents: 250, Active: false, Revision: 7, Source: "all"}, 3, 7, now)
		}},
		{"quarantine", func() error { return j.Quarantine(ctx, sale(2).FlowNo, "refused by HQ") }},
		{"unappliable", func() error { return j.SetUnappliable(ctx, sale(3).FlowNo, "lost in a failover") }},
		{"stock adjustment", func() error {
			return j.AppendAdjustment(ctx, Adjustment{AdjustmentID: "ADJ1", IdemKey: "adj-1", Fingerprint: "fp", Barcode: "A",
				Delta: 12, Reason: "received", Stock: 17, CreatedAt: now, Body: []byte(`{"delta":12}`)})
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("journal a %s: %v", s.what, err)
		}
	}
	tables := tablesOf(t, j)
	counts := map[string]int{}
	for _, tb := range tables {
		counts[tb] = countRows(t, j, tb)
		if counts[tb] == 0 {
			t.Fatalf("the test leaves table %s empty: give it a row so its salvage is checked", tb)
		}
		if !slices.Contains(salvageTables, tb) {
			t.Errorf("table %s is not in salvageTables: a salvage would drop its rows", tb)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	dest := filepath.Join(dir, "salvaged.db")
	rep, err := Salvage(ctx, src, dest)
	if err != nil {
		t.Fatal(err)
	}
	nj, err := Open(ctx, dest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer nj.Close()
	for _, tb := range tables {
		if got := countRows(t, nj, tb); got != counts[tb] && tb != "meta" {
			t.Errorf("table %s: %d rows salvaged of %d (report %+v)", tb, got, counts[tb], rep)
		}
	}
	a, err := nj.AdjustmentByKey(ctx, "adj-1")
	if err != nil || a == nil || a.Delta != 12 || a.Stock != 17 {
		t.Fatalf("salvaged adjustment: %+v, %v", a, err)
	}
	if u, err := nj.Unappliable(ctx); err != nil || len(u) != 1 || u[0].FlowNo != sale(3).FlowNo {
		t.Fatalf("salvaged unappliable rows: %+v, %v", u, err)
	}
}

func tablesOf(t *testing.T, j *Journal) []string {
	t.Helper()
	rows, err := j.r.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func countRows(t *testing.T, j *Journal, table string) int {
	t.Helper()
	var n int
	if err := j.r.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s", table)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
