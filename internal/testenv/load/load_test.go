package load

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCallsEveryIndexOnce(t *testing.T) {
	const n = 500
	var seen [n]atomic.Int32
	_, lat, err := Run(n, 7, func(i int) error { seen[i].Add(1); return nil })
	if err != nil || len(lat) != n {
		t.Fatalf("Run = %d latencies, %v", len(lat), err)
	}
	for i := range seen {
		if c := seen[i].Load(); c != 1 {
			t.Fatalf("op(%d) ran %d times", i, c)
		}
	}
}

func TestRunStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var calls atomic.Int32
	_, _, err := Run(10000, 4, func(i int) error {
		calls.Add(1)
		if i == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want boom", err)
	}
	if c := calls.Load(); c >= 10000 {
		t.Fatalf("all %d calls ran after the error", c)
	}
}

func TestPercentile(t *testing.T) {
	lat := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{0, 1}, {0.5, 6}, {0.99, 10}, {1, 10}} {
		if got := Percentile(lat, tt.p); got != tt.want {
			t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if lat[0] != 5 {
		t.Error("Percentile sorted its argument")
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("Percentile of nothing is not zero")
	}
}
