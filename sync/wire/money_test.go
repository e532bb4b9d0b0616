package wire

import (
	"errors"
	"math"
	"testing"
)

func TestMulAndAddCentsReportOverflow(t *testing.T) {
	mul := []struct {
		a, b int64
		want int64
		ok   bool
	}{
		{1000000, 1000000000000, 1000000000000000000, true},
		{math.MaxInt64, 1, math.MaxInt64, true},
		{1 << 32, 1 << 31, 0, false}, // 2^63
		{3, 3074457345618258603, 0, false},
		{1000000, 446744073709, 446744073709000000, true},
		{-1, 5, 0, false},
		{0, math.MaxInt64, 0, true},
	}
	for _, c := range mul {
		if got, ok := MulCents(c.a, c.b); got != c.want || ok != c.ok {
			t.Errorf("MulCents(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
	add := []struct {
		a, b int64
		want int64
		ok   bool
	}{
		{math.MaxInt64 - 1, 1, math.MaxInt64, true},
		{math.MaxInt64, 1, 0, false},
		{math.MinInt64, -1, 0, false},
		{math.MinInt64, math.MaxInt64, -1, true},
		{-5, 3, -2, true},
	}
	for _, c := range add {
		if got, ok := AddCents(c.a, c.b); got != c.want || ok != c.ok {
			t.Errorf("AddCents(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

func TestCheckAmounts(t *testing.T) {
	const max = DefaultMaxSaleCents
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
