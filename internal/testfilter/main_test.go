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

// A timeout ends the package, not the test that hung: its output (the
// timeout's panic and goroutine dump) must still be printed, with its name.
func TestFilterPrintsTheTestAPackageFailureCutShort(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestDone"}`,
		`{"Action":"output","Package":"p","Test":"TestDone","Output":"noise\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestDone","Elapsed":0.1}`,
		`{"Action":"run","Package":"p","Test":"TestHung"}`,
		`{"Action":"output","Package":"p","Test":"TestHung","Output":"panic: test timed out after 40m0s\n"}`,
		`{"Action":"output","Package":"p","Test":"TestHung","Output":"goroutine 7 [chan receive]:\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t2400.1s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":2400.1}`,
	}, "\n")
	var out strings.Builder
	failed, err := filter(strings.NewReader(in), &out)
	if err != nil || !failed {
		t.Fatalf("failed=%v err=%v", failed, err)
	}
	got := out.String()
	for _, want := range []string{"--- UNFINISHED p TestHung:", "test timed out", "goroutine 7 [chan receive]", "FAIL p (2400.1s)"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "noise") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
}
