package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRaceReportOfARealRaceBuild: a child built with -race that races is
// found in its log (what fails an e2e test driving race-built daemons),
// the same child built plain is not, and a log with nothing is "".
func TestRaceReportOfARealRaceBuild(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		race bool
	}{{"race-built", true}, {"plain", false}} {
		t.Run(c.name, func(t *testing.T) {
			bin := filepath.Join(dir, c.name)
			args := []string{"build", "-o", bin}
			if c.race {
				args = append(args, "-race")
			}
			if out, err := exec.Command("go", append(args, "./testdata/racy")...).CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			out, _ := exec.Command(bin).CombinedOutput() // a race build exits 66 after a race
			log := filepath.Join(dir, c.name+".log")
			if err := os.WriteFile(log, out, 0o644); err != nil {
				t.Fatal(err)
			}
			r := (&Proc{Name: c.name, Log: log}).RaceReport()
			if c.race != (r != "") {
				t.Fatalf("race build %v, report %q; output:\n%s", c.race, r, out)
			}
			if c.race && (!strings.HasPrefix(r, "WARNING: DATA RACE") || strings.Contains(r, raceBanner)) {
				t.Fatalf("report not cut at its banners: %q", r)
			}
		})
	}
	if r := (&Proc{Log: filepath.Join(dir, "absent.log")}).RaceReport(); r != "" {
		t.Fatalf("no log, report %q", r)
	}
}
