package racebuild

import "testing"

// The build tag decides: a -race run of this test and a plain one must
// disagree, which is what the Makefile's two runs show.
func TestScaleFollowsTheBuild(t *testing.T) {
	for _, tt := range []struct{ n, div, race, plain int }{
		{1000, 10, 100, 1000},
		{5, 10, 1, 5},
		{0, 4, 1, 0},
	} {
		want := tt.plain
		if Enabled {
			want = tt.race
		}
		if got := Scale(tt.n, tt.div); got != want {
			t.Errorf("Scale(%d, %d) = %d with Enabled=%v, want %d", tt.n, tt.div, got, Enabled, want)
		}
	}
}
