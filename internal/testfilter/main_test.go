package main

import (
	"strings"
	"testing"
)

func TestFilterKeepsFailuresAndSummarisesPasses(t *testing.T) {
	in := strings.Join([]string{
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
	}, "\n")
	var out strings.Builder
	failed, err := filter(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("failed=%v err=%v", failed, err)
	}
	got := out.String()
	for _, want := range []string{"--- PASS p TestA (1.5s)", "wrong total", "--- FAIL: TestB", "--- SKIP p TestC: c_test.go:3: needs root", "FAIL p (2.0s)"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "noise") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
}
