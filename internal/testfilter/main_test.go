package main

import (
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{
			name: "failures kept, passes summarised",
			in: []string{
				`{"Action":"run","Package":"p","Test":"TestA"}`,
				`{"Action":"output","Package":"p","Test":"TestA","Output":"noise\n"}`,
				`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}`,
				`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"    x_test.go:9: wrong total\n"}`,
				`{"Action":"fail","Package":"p","Test":"TestB/sub"}`,
				`{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}`,
				`{"Action":"fail","Package":"p","Test":"TestB"}`,
				`{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:3: needs root\n"}`,
				`{"Action":"skip","Package":"p","Test":"TestC"}`,
				`{"Action":"fail","Package":"p","Elapsed":2}`,
			},
			want: []string{"--- PASS p TestA (1.5s)", "wrong total", "--- FAIL: TestB", "--- SKIP p TestC: c_test.go:3: needs root", "FAIL p (2.0s)"},
		},
		{
			// A timeout ends the package, not the test that hung: its
			// output (the panic and goroutine dump) is printed, named.
			name: "the test a package failure cut short",
			in: []string{
				`{"Action":"run","Package":"p","Test":"TestDone"}`,
				`{"Action":"output","Package":"p","Test":"TestDone","Output":"noise\n"}`,
				`{"Action":"pass","Package":"p","Test":"TestDone","Elapsed":0.1}`,
				`{"Action":"run","Package":"p","Test":"TestHung"}`,
				`{"Action":"output","Package":"p","Test":"TestHung","Output":"panic: test timed out after 40m0s\n"}`,
				`{"Action":"output","Package":"p","Test":"TestHung","Output":"goroutine 7 [chan receive]:\n"}`,
				`{"Action":"output","Package":"p","Output":"FAIL\tp\t2400.1s\n"}`,
				`{"Action":"fail","Package":"p","Elapsed":2400.1}`,
			},
			want: []string{"--- UNFINISHED p TestHung:", "test timed out", "goroutine 7 [chan receive]", "FAIL p (2400.1s)"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			failed, err := filter(strings.NewReader(strings.Join(tc.in, "\n")), &out)
			if err != nil || !failed {
				t.Fatalf("failed=%v err=%v", failed, err)
			}
			got := out.String()
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q:\n%s", want, got)
				}
			}
			if strings.Contains(got, "noise") {
				t.Errorf("a passing test's output was printed:\n%s", got)
			}
		})
	}
}
