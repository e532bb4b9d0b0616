package cents

import (
	"math"
	"testing"
)

func TestMulAndAddReportOverflow(t *testing.T) {
	tests := []struct {
		name string
		op   func(a, b int64) (int64, bool)
		a, b int64
		want int64
		ok   bool
	}{
		{"mul: the largest line", Mul, 1000000, 1000000000000, 1000000000000000000, true},
		{"mul: MaxInt64 × 1", Mul, math.MaxInt64, 1, math.MaxInt64, true},
		{"mul: 2^63 overflows", Mul, 1 << 32, 1 << 31, 0, false},
		{"mul: just past MaxInt64", Mul, 3, 3074457345618258603, 0, false},
		{"mul: negative qty", Mul, -1, 5, 0, false},
		{"mul: negative price", Mul, 5, -1, 0, false},
		{"mul: zero", Mul, 0, math.MaxInt64, 0, true},
		{"add: up to MaxInt64", Add, math.MaxInt64 - 1, 1, math.MaxInt64, true},
		{"add: past MaxInt64", Add, math.MaxInt64, 1, 0, false},
		{"add: past MinInt64", Add, math.MinInt64, -1, 0, false},
		{"add: opposite signs never overflow", Add, math.MinInt64, math.MaxInt64, -1, true},
		{"add: negative result", Add, -5, 3, -2, true},
	}
	for _, tt := range tests {
		if got, ok := tt.op(tt.a, tt.b); got != tt.want || ok != tt.ok {
			t.Errorf("%s: (%d, %d) = %d, %v; want %d, %v", tt.name, tt.a, tt.b, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSum(t *testing.T) {
	const max = 1000
	tests := []struct {
		name  string
		lines []Line
		want  int64
		fault int // the line of SumAbove; -1 = none
	}{
		{"no lines", nil, 0, -1},
		{"sum of products", []Line{{2, 150}, {1, 400}}, 700, -1},
		{"exactly max", []Line{{1, 999}, {1, 1}}, max, -1},
		{"one past max at the second line", []Line{{1, 999}, {1, 2}, {1, 0}}, 0, 1},
		{"a product that overflows", []Line{{1, 1}, {math.MaxInt64, 2}}, 0, 1},
		{"a sum that would wrap", []Line{{1, math.MaxInt64}, {1, math.MaxInt64}}, 0, 0},
	}
	for _, tt := range tests {
		got, f := Sum(tt.lines, max)
		switch {
		case tt.fault < 0 && (f != nil || got != tt.want):
			t.Errorf("%s: Sum = %d, %v; want %d", tt.name, got, f, tt.want)
		case tt.fault >= 0 && (f == nil || f.Rule != SumAbove || f.Line != tt.fault):
			t.Errorf("%s: Sum = %d, %v; want SumAbove at line %d", tt.name, got, f, tt.fault)
		}
	}
}

// TestCheck: each rule is the fault of a transaction that breaks it
// alone, and where two are broken the first in Check's order wins.
func TestCheck(t *testing.T) {
	const max = DefaultMaxSaleCents
	var wrap []Line // 2^64 + 5,000,100 in 64 bits is 5,000,100
	for range 18 {
		wrap = append(wrap, Line{1000000, 1000000000000})
	}
	wrap = append(wrap, Line{1000000, 446744073709}, Line{1, 551716}, Line{1, 5000000})
	tests := []struct {
		name  string
		lines []Line
		total int64
		max   int64
		rule  Rule // 0 = sound
		line  int
	}{
		{"lines sum to the total", []Line{{2, 150}, {1, 400}}, 700, max, 0, 0},
		{"total exactly the bound", []Line{{1, max}}, max, max, 0, 0},
		{"nothing sold", nil, 0, max, 0, 0},
		{"wrapping lines", wrap, 5000100, math.MaxInt64, SumAbove, 9},
		{"negative total", nil, -1, max, TotalRange, 0},
		{"total one above the bound", []Line{{1, max}, {1, 1}}, max + 1, max, TotalRange, 0},
		{"zero quantity", []Line{{1, 1}, {0, 700}}, 1, max, QtyPositive, 1},
		{"negative price", []Line{{1, -1}, {1, 1}}, 0, max, PriceRange, 0},
		{"price above the bound", []Line{{1, max + 1}}, max, max, PriceRange, 0},
		{"line above the bound", []Line{{3, max / 2}}, max, max, LineAbove, 0},
		{"lines sum above the bound", []Line{{1, max}, {1, 1}}, max, max, SumAbove, 1},
		{"sum off by one", []Line{{1, 700}}, 699, max, Mismatch, 0},
		{"total range before a bad line", []Line{{0, -1}}, -1, max, TotalRange, 0},
		{"an earlier line before a later one", []Line{{1, max + 1}, {0, 1}}, 1, max, PriceRange, 0},
		{"a line before the mismatch", []Line{{1, 1}, {0, 1}}, 5, max, QtyPositive, 1},
	}
	for _, tt := range tests {
		f := Check(tt.lines, tt.total, tt.max)
		switch {
		case tt.rule == 0 && f != nil:
			t.Errorf("%s: Check = %v, want sound", tt.name, f)
		case tt.rule != 0 && (f == nil || f.Rule != tt.rule || f.Line != tt.line || f.Max != tt.max):
			t.Errorf("%s: Check = %+v, want rule %d at line %d", tt.name, f, tt.rule, tt.line)
		}
	}
	if f := Check([]Line{{2, 100}}, 150, max); f == nil || f.Sum != 200 {
		t.Errorf("a mismatch carries the lines' sum: %+v", f)
	}
}
