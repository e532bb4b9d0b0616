package bench

import (
	"os"
	"strings"
	"testing"
)

func TestParsePhases(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"sales", []string{"sales"}, ""},
		{"lookups, ingest", []string{"lookups", "ingest"}, ""},
		{"sales,lookup", nil, `unknown phase "lookup"`},
	}
	for _, tt := range tests {
		got, err := parsePhases(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parsePhases(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parsePhases(%q): %v", tt.in, err)
			continue
		}
		if (got == nil) != (tt.want == nil) || len(got) != len(tt.want) {
			t.Errorf("parsePhases(%q) = %v, want %v", tt.in, got, tt.want)
			continue
		}
		for _, p := range tt.want {
			if !got[p] {
				t.Errorf("parsePhases(%q) lacks %q", tt.in, p)
			}
		}
	}
}

func TestPerOpMicros(t *testing.T) {
	a := procCPU{"posedge": 1.0, "redis-server :6379": 2.0, "harness": 0.5, "idle": 3}
	b := procCPU{"posedge": 1.3, "redis-server :6379": 2.1, "harness": 0.55, "idle": 3, "new": 0.01}
	got, total := perOpMicros(a, b, 1000)
	want := "posedge 300, redis-server :6379 100, harness 50, new 10 = 460 µs"
	if got != want || total < 459.9 || total > 460.1 {
		t.Errorf("perOpMicros = %q, %v; want %q, 460", got, total, want)
	}
	if got, total := perOpMicros(nil, b, 1000); got != "no /proc" || total != 0 {
		t.Errorf("without /proc: %q %v", got, total)
	}
}

func TestRedisPort(t *testing.T) {
	tests := map[string]string{
		"redis-server 127.0.0.1:6379\x00\x00":   " :6379",
		"redis-sentinel *:26379 [sentinel]\x00": " :26379",
		"redis-server\x00/etc/redis.conf\x00":   "",
	}
	for in, want := range tests {
		if got := redisPort(in); got != want {
			t.Errorf("redisPort(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadProcCPUAndResidentBytes(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here: the figures that need it say so in their detail")
	}
	for range 200000 { // some CPU of our own
		_ = strings.Repeat("x", 64)
	}
	c := readProcCPU()
	if c["harness"] <= 0 {
		t.Errorf("the test process's own CPU = %v, want > 0 (%d names)", c["harness"], len(c))
	}
	if rss := residentBytes(os.Getpid()); rss < 1<<20 {
		t.Errorf("residentBytes(self) = %v, want at least 1 MiB", rss)
	}
	if rss := residentBytes(0); rss != 0 {
		t.Errorf("residentBytes(0) = %v, want 0", rss)
	}
}

func TestStealShare(t *testing.T) {
	tests := []struct {
		name   string
		before string
		after  string
		want   float64 // -1: unknown
	}{
		// the lines of this VM around 10 s of two busy loops: 620 of
		// 2,008 ticks stolen
		{"busy", "cpu  143042 0 23061 695177 21885 0 5312 88302 0 0", "cpu  143546 0 23942 695179 21885 0 5313 88922 0 0", 620.0 / 2008},
		{"idle, no steal", "cpu 10 0 10 100 0 0 0 5 0 0", "cpu 10 0 10 300 0 0 0 5 0 0", 0},
		{"a kernel without guest fields", "cpu 1 0 1 1 0 0 0 1", "cpu 2 0 1 1 0 0 0 2", 0.5},
		{"no time passed", "cpu 1 0 1 1 0 0 0 1", "cpu 1 0 1 1 0 0 0 1", -1},
		{"too few fields", "cpu 1 0 1 1 0 0 0", "cpu 2 0 1 1 0 0 0", -1},
		{"a per-CPU line", "cpu0 1 0 1 1 0 0 0 1", "cpu0 2 0 1 1 0 0 0 2", -1},
		{"not a number", "cpu 1 0 1 1 0 0 0 x", "cpu 2 0 1 1 0 0 0 2", -1},
	}
	for _, tt := range tests {
		a, okA := parseMachineTicks(tt.before)
		b, okB := parseMachineTicks(tt.after)
		got := stealShare(a, b, okA, okB)
		if got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("%s: stealShare = %v, want %v", tt.name, got, tt.want)
		}
	}
	if _, ok := readMachineTicks(); !ok {
		if _, err := os.Stat("/proc/stat"); err == nil {
			t.Error("/proc/stat exists but was not read")
		}
	}
}
