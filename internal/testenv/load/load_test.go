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

func TestLongestGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var s []time.Time
		for _, m := range ms {
			s = append(s, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return s
	}
	for _, tt := range []struct {
		name    string
		oks     []time.Time
		to      int // ms after t0
		gap     time.Duration
		beganMs int
	}{
		{"none: the whole window", nil, 500, 500 * time.Millisecond, 0},
		{"from the start to the first", at(300, 350, 400), 450, 300 * time.Millisecond, 0},
		{"between two, unsorted", at(400, 100, 900, 150), 950, 500 * time.Millisecond, 400},
		{"from the last to the end", at(10, 20, 30), 1000, 970 * time.Millisecond, 30},
		{"before from and after to ignored", at(-5000, 100, 200, 9000), 300, 100 * time.Millisecond, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			orig := append([]time.Time(nil), tt.oks...)
			gap, began := LongestGap(tt.oks, t0, t0.Add(time.Duration(tt.to)*time.Millisecond))
			if gap != tt.gap || !began.Equal(t0.Add(time.Duration(tt.beganMs)*time.Millisecond)) {
				t.Errorf("LongestGap = %v from +%v, want %v from +%dms", gap, began.Sub(t0), tt.gap, tt.beganMs)
			}
			for i := range orig {
				if !orig[i].Equal(tt.oks[i]) {
					t.Fatal("LongestGap reordered its argument")
				}
			}
		})
	}
}
