//go:build unix

package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkConcurrentAppends is the journal's part of durable sales at 32
// callers, as the bench's sales phase runs them: appends (one line each)
// from 32 goroutines sharing commits. cpu-µs/op is the process's CPU
// (user + system, getrusage) per append: fsync and WAL writes included,
// and far less sensitive to a shared machine than ns/op.
func BenchmarkConcurrentAppends(b *testing.B) {
	ctx := context.Background()
	var commits atomic.Int64
	j, err := Open(ctx, filepath.Join(b.TempDir(), "journal.db"), Options{OnCommit: func(int) { commits.Add(1) }})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	lines := []Line{{Barcode: "A", Qty: 1, PriceCents: 199}}
	body := []byte(`{"flow_no":"1000000000000001","store_id":"S1","terminal_id":"T01","kind":"sale","total_cents":199,"tender":"cash","lines":[{"barcode":"A","qty":1,"price_cents":199}],"created_at":"2026-12-01T10:00:00.000000001Z","occurred_at":"2026-12-01T10:00:00.000000001Z"}`)
	now := time.Now()
	var next atomic.Int64
	b.SetParallelism(16) // × GOMAXPROCS 2 = 32 callers
	cpu0 := processCPU()
	b.ResetTimer()
	commits.Store(0)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			t := Txn{FlowNo: fmt.Sprintf("1%015d", i), Seq: i, TerminalID: "T01", IdemKey: fmt.Sprintf("k%d", i), Fingerprint: "fp",
				Kind: "sale", Tender: "cash", TotalCents: 199, BusinessDay: "20261201", BusinessHour: "10",
				CreatedAt: now, Lines: lines, Body: body, Applied: true}
			if err := j.Append(ctx, t); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(b.N)/float64(max(commits.Load(), 1)), "appends/commit")
}

// processCPU is the CPU time (user + system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
