// Package load drives an operation from many goroutines at once and
// reads its latencies: the closed loop every throughput comparison in
// the benchmarks uses (edge/api, edge/ratelimit, bench), written once so
// that two sides of a comparison are driven the same way.
package load

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Run calls op(i) for i in 0..n-1 from workers goroutines, each taking
// the next i as soon as its call returns (a closed loop), and returns the
// elapsed time and every call's latency. The first error stops every
// worker and is returned.
func Run(n, workers int, op func(i int) error) (time.Duration, []time.Duration, error) {
	var next atomic.Int64
	var firstErr atomic.Pointer[error]
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for firstErr.Load() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := op(i); err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	if p := firstErr.Load(); p != nil {
		return 0, nil, *p
	}
	return time.Since(start), lat, nil
}

// Percentile is the p-th fraction (0..1) of the latencies, nearest rank
// from below; lat is left unsorted. Zero for no latencies.
func Percentile(lat []time.Duration, p float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// LongestGap is the longest time between two successes in the window
// [from, to]: from the window's start to the first success, between
// consecutive ones, and from the last to its end (a window with none is
// one gap). It returns the gap and when it began. oks need not be sorted
// and is left as it is; successes before from or after to are ignored.
// It is the "no sale answered" figure of a failover: the fault at from,
// the recovery seen (and a little more) at to.
func LongestGap(oks []time.Time, from, to time.Time) (gap time.Duration, began time.Time) {
	s := slices.Clone(oks)
	slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
	prev := from
	began = from
	for _, ok := range s {
		if ok.Before(from) || ok.After(to) {
			continue
		}
		if d := ok.Sub(prev); d > gap {
			gap, began = d, prev
		}
		prev = ok
	}
	if d := to.Sub(prev); d > gap {
		gap, began = d, prev
	}
	return gap, began
}
