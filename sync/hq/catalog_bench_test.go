package hq_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/posedge/posedge/internal/cents"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
)

// BenchmarkCatalogImport50k imports a price list of 50,000 items into a
// fresh bucket (all written), then the same list again (all unchanged):
// the time of each and the heap the parsed list takes are reported.
func BenchmarkCatalogImport50k(b *testing.B) {
	const items = 50_000
	var sb strings.Builder
	sb.WriteString("barcode,name,price_cents,active,store_id\n")
	for i := range items {
		fmt.Fprintf(&sb, "%013d,Item number %d,%d,true,\n", 4000000000000+i, i, 100+i%5000)
	}
	path := filepath.Join(b.TempDir(), "prices.csv")
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f, _ := os.Open(path)
	rows, err := hq.ParseCatalogCSV(f, cents.DefaultMaxSaleCents)
	f.Close()
	if err != nil || len(rows) != items {
		b.Fatalf("parse: %d rows, %v", len(rows), err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(rows)
	parsedMiB := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)

	b.ResetTimer() // also drops metrics reported so far
	b.ReportMetric(parsedMiB, "MiB-parsed-list")
	for range b.N {
		b.StopTimer()
		n := testenv.StartNATS(b)
		cfg := testConfig(n.URL(), "sqlite://unused.db")
		b.StartTimer()
		s, err := hq.ImportCatalogFile(context.Background(), cfg, path, io.Discard, testLogger(b))
		if err != nil || s.Written != items {
			b.Fatalf("first import: %+v %v", s, err)
		}
		b.ReportMetric(s.Took.Seconds(), "s-first-import")
		s, err = hq.ImportCatalogFile(context.Background(), cfg, path, io.Discard, testLogger(b))
		if err != nil || s.Unchanged != items {
			b.Fatalf("second import: %+v %v", s, err)
		}
		b.ReportMetric(s.Took.Seconds(), "s-unchanged-import")
		b.StopTimer()
		n.Stop()
		b.StartTimer()
	}
}
