package bench

import (
	"math"
	"testing"
)

func TestHistQuantile(t *testing.T) {
	inf := math.Inf(1)
	zero := []bucket{{0.001, 0}, {0.002, 0}, {0.005, 0}, {inf, 0}}
	tests := []struct {
		name          string
		before, after []bucket
		q, want       float64
	}{
		{"all in the first bucket: interpolated from 0", zero,
			[]bucket{{0.001, 100}, {0.002, 100}, {0.005, 100}, {inf, 100}}, 0.5, 0.0005},
		{"p99 in the third bucket", zero,
			[]bucket{{0.001, 90}, {0.002, 98}, {0.005, 100}, {inf, 100}}, 0.99, 0.0035},
		{"only the observations between the scrapes count",
			[]bucket{{0.001, 1000}, {0.002, 1000}, {0.005, 1000}, {inf, 1000}},
			[]bucket{{0.001, 1000}, {0.002, 1100}, {0.005, 1100}, {inf, 1100}}, 0.5, 0.0015},
		{"beyond the last finite bound: that bound", zero,
			[]bucket{{0.001, 0}, {0.002, 0}, {0.005, 50}, {inf, 100}}, 0.99, 0.005},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := histQuantile(tt.before, tt.after, tt.q); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("histQuantile = %v, want %v", got, tt.want)
			}
		})
	}
	if got := histQuantile(zero, zero, 0.99); !math.IsNaN(got) {
		t.Errorf("no observations: %v, want NaN (the figure check then fails)", got)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFigureProblems(t *testing.T) {
	var good string
	for _, n := range requiredFigures {
		good += "figure " + n + " 1.500\n"
	}
	tests := []struct {
		name     string
		out      string
		problems int
	}{
		{"every figure once", good, 0},
		{"one missing", good[len("figure "+requiredFigures[0]+" 1.500\n"):], 1},
		{"NaN", good + "figure extra NaN\n", 1},
		{"+Inf", good + "figure extra +Inf\n", 1},
		{"printed twice", good + "figure " + requiredFigures[1] + " 2\n", 1},
		{"nothing", "", len(requiredFigures)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := figureProblems([]byte(tt.out)); len(got) != tt.problems {
				t.Errorf("problems = %q, want %d", got, tt.problems)
			}
		})
	}
}
