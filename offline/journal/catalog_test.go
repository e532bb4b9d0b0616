package journal

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// A journal written by the version before the catalog (its schema: the
// transactions and the set-aside table, no catalog, no stock adjustments)
// opens read-only — what `posedge status` does while the daemon is down
// — with the catalog reported as not initialised; the daemon's next
// writable open adds the tables.
func TestReadOnlyOpenOfJournalBeforeTheCatalog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	old, err := sql.Open("sqlite", dsn(path, Options{BusyTimeout: time.Second}, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(schema + unappliableSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(`INSERT INTO items (barcode, name, price_cents, stock, updated_at) VALUES ('A', 'Apple', 150, 9, ?)`, ts(time.Now())); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of a journal before the catalog: %v", err)
	}
	if ro.CatalogInitialised() {
		t.Error("catalog reported initialised in a journal without its table")
	}
	if it, err := ro.Item(ctx, "A"); err != nil || it == nil || it.Name != "Apple" || it.Stock != 9 || !it.Active {
		t.Errorf("item A = %+v %v, want Apple, stock 9, active", it, err)
	}
	if rev, id, at, err := ro.CatalogMark(ctx); err != nil || rev != 0 || id != "" || !at.IsZero() {
		t.Errorf("catalog mark %d %q %v %v, want none", rev, id, at, err)
	}
	if e, err := ro.CatalogEntry(ctx, "A"); err != nil || e != nil {
		t.Errorf("catalog entry %+v %v, want none", e, err)
	}
	if st, err := ro.Stats(ctx); err != nil || st.Rows != 0 {
		t.Errorf("stats %+v %v", st, err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}

	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !j.CatalogInitialised() {
		t.Error("catalog not initialised after a writable open")
	}
	if err := j.ApplyCatalog(ctx, &CatalogItem{Barcode: "A", Name: "Apple", PriceCents: 160, Active: false, Revision: 3, Source: "all"}, 0, 3, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	ro, err = Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if it, err := ro.Item(ctx, "A"); err != nil || !ro.CatalogInitialised() || it.Active || it.PriceCents != 160 || it.Stock != 9 {
		t.Errorf("after the upgrade: item A = %+v %v, want inactive at 160, stock 9", it, err)
	}
}
