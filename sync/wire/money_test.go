package wire

import (
	"errors"
	"math"
	"testing"

	"github.com/posedge/posedge/internal/cents"
)

func TestCheckAmounts(t *testing.T) {
	const max = cents.DefaultMaxSaleCents
	var wrap []Line // the batch: 2^64 + 5,000,100 in 64 bits is 5,000,100
	for range 18 {
		wrap = append(wrap, Line{"ov", 1000000, 1000000000000})
	}
	wrap = append(wrap, Line{"ov", 1000000, 446744073709}, Line{"ov", 1, 551716}, Line{"ov", 1, 5000000})
	cases := []struct {
		name  string
		lines []Line
		total int64
		max   int64
		ok    bool
	}{
		{"lines sum to the total", []Line{{"A", 2, 150}, {"B", 1, 400}}, 700, max, true},
		{"total exactly the bound", []Line{{"A", 1, max}}, max, max, true},
		{"nothing sold", nil, 0, max, true},
		{"wrapping lines", wrap, 5000100, math.MaxInt64, false},
		{"total one above the bound", []Line{{"A", 1, max}, {"B", 1, 1}}, max + 1, max, false},
		{"line above the bound", []Line{{"A", 3, max / 2}}, 3 * (max / 2), max, false},
		{"price above the bound", []Line{{"A", 1, max + 1}}, max + 1, max, false},
		{"sum off by one", []Line{{"A", 1, 700}}, 699, max, false},
		{"zero quantity", []Line{{"A", 0, 700}}, 0, max, false},
		{"negative price", []Line{{"A", 1, -1}, {"B", 1, 1}}, 0, max, false},
		{"negative total", nil, -1, max, false},
	}
	for _, c := range cases {
		err := CheckAmounts(c.lines, c.total, c.max)
		if (err == nil) != c.ok {
			t.Errorf("%s: CheckAmounts = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v does not wrap ErrInvalid", c.name, err)
		}
	}
}
