package hq

import "testing"

// TestDecodeWorkers: decoding never takes every P, so the committer, back
// from its commit's fsync, finds one (issue 26); a small batch is decoded
// by the fetching goroutine alone.
func TestDecodeWorkers(t *testing.T) {
	for _, c := range []struct {
		procs, n, want int
	}{
		{procs: 1, n: 256, want: 1},
		{procs: 2, n: 256, want: 1}, // this machine: one core decodes, one commits
		{procs: 4, n: 256, want: 3},
		{procs: 8, n: 256, want: 7},
		{procs: 8, n: 64, want: 2},
		{procs: 8, n: 31, want: 1},
		{procs: 8, n: 0, want: 1},
	} {
		if got := decodeWorkers(c.procs, c.n); got != c.want {
			t.Errorf("decodeWorkers(%d procs, %d messages) = %d, want %d", c.procs, c.n, got, c.want)
		}
	}
}
