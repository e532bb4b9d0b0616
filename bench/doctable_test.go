package bench

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The table of docs/performance.md is written by `make bench`
// (POSEDGE_BENCH_DOC names the file): the lines between docBegin and
// docEnd are replaced by docTable of that run, never typed by hand.
const (
	docBegin = "<!-- bench table: begin. Written by `make bench` (bench/doctable_test.go docTable) from one run; edit the generator, not these lines. -->"
	docEnd   = "<!-- bench table: end -->"
)

// docHeader is the table's header and separator.
const docHeader = "| figure | median | goal | repetitions | load average (1 min) | detail |\n| --- | ---: | --- | --- | --- | --- |\n"

// docTable renders one run's figures as the marked section's content.
func docTable(run runInfo, figs []figure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`make bench` (%s), %s, tree `%s`: %d repetitions of each figure, the median shown; %s/%s, %d CPUs; took %s; load average (1 min) %.2f at start, %.2f at end%s",
		run.Mode, run.Started.UTC().Format("2006-01-02 15:04 UTC"), run.Commit, run.Reps, runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), run.Took.Round(time.Second), run.LoadStart, run.LoadEnd, run.stealText())
	if run.Output != "" {
		fmt.Fprintf(&b, "; whole output [perf/%s](perf/%s)", run.Output, run.Output)
	}
	b.WriteString(".\n\n")
	b.WriteString(docHeader)
	for _, f := range figs {
		b.WriteString(docRow(f))
	}
	return b.String()
}

func docRow(f figure) string {
	goal := f.Goal
	goal = strings.NewReplacer(">=", "≥", "<=", "≤").Replace(goal)
	return fmt.Sprintf("| `%s` | %s | %s | %s | %s | %s |\n", f.Name, strconv.FormatFloat(f.Value, 'f', 3, 64),
		mdCell(goal), repString(f.Reps), loadString(f.Loads), mdCell(f.Detail))
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// rewriteDocTable replaces the marked section of the file at path.
func rewriteDocTable(path, table string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := replaceSection(doc, table)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

func replaceSection(doc []byte, table string) ([]byte, error) {
	i, j := bytes.Index(doc, []byte(docBegin)), bytes.Index(doc, []byte(docEnd))
	if i < 0 || j < i {
		return nil, fmt.Errorf("no section between %q and %q", docBegin, docEnd)
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(docBegin)])
	out.WriteString("\n\n" + table + "\n")
	out.Write(doc[j:])
	return out.Bytes(), nil
}

// section is the content of the marked section of doc.
func section(doc []byte) (string, error) {
	i, j := bytes.Index(doc, []byte(docBegin)), bytes.Index(doc, []byte(docEnd))
	if i < 0 || j < i {
		return "", fmt.Errorf("no section between %q and %q", docBegin, docEnd)
	}
	return strings.TrimSpace(string(doc[i+len(docBegin) : j])), nil
}

var (
	docRunLine = regexp.MustCompile("^`make bench` \\((full|smoke)\\), \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC, tree `[^`]*`: (\\d+) repetitions of each figure, the median shown; .* load average \\(1 min\\) [0-9.-]+ at start, [0-9.-]+ at end.*\\.$")
	docRowLine = regexp.MustCompile("^\\| `([a-z0-9_]+)` \\| (-?[0-9]+\\.[0-9]{3}) \\| ([^|]*) \\| ([-0-9. ]+) \\| ([-0-9. ]+) \\| (.*) \\|$")
)

// docTableProblems says how the marked section of doc differs from what
// docTable writes: the run line, the header, one row per figure with as
// many repetitions and load averages as the run made, each row exactly
// as docRow renders what it holds, every required figure.
func docTableProblems(doc []byte) []string {
	sec, err := section(doc)
	if err != nil {
		return []string{err.Error()}
	}
	run, rest, _ := strings.Cut(sec, "\n\n")
	m := docRunLine.FindStringSubmatch(run)
	if m == nil {
		return []string{fmt.Sprintf("run line %q: not the generator's", run)}
	}
	reps, _ := strconv.Atoi(m[2])
	body, ok := strings.CutPrefix(rest+"\n", docHeader)
	if !ok {
		return []string{"the table's header is not the generator's"}
	}
	var problems []string
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		r := docRowLine.FindStringSubmatch(line)
		if r == nil {
			problems = append(problems, fmt.Sprintf("row %q: not the generator's shape", line))
			continue
		}
		f := figure{Name: r[1], Detail: strings.ReplaceAll(r[6], `\|`, "|"), Goal: strings.ReplaceAll(r[3], `\|`, "|")}
		f.Value, _ = strconv.ParseFloat(r[2], 64)
		f.Reps, f.Loads = floats(r[4]), floats(r[5])
		// Fewer repetitions only where a phase failed (a finding in the
		// notes, e.g. a failover that never got back to normal mode).
		if len(f.Reps) < 1 || len(f.Reps) > reps || len(f.Loads) != 1 && len(f.Loads) != len(f.Reps) {
			problems = append(problems, fmt.Sprintf("%s: %d repetitions and %d load averages, the run made %d", f.Name, len(f.Reps), len(f.Loads), reps))
		}
		if got := docRow(f); got != line+"\n" {
			problems = append(problems, fmt.Sprintf("row %q: the generator writes %q", line, got))
		}
		if seen[f.Name] {
			problems = append(problems, f.Name+": twice")
		}
		seen[f.Name] = true
	}
	// The slopes of sizeFigures may be missing where their phase failed
	// (a FINDING note of the run); the required figures and the floor not.
	for _, n := range append(append([]string{}, requiredFigures...), "lookup_vs_http_evalsha_floor") {
		if !seen[n] {
			problems = append(problems, n+": missing")
		}
	}
	return problems
}

func floats(s string) []float64 {
	var out []float64
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// TestPerformanceDocTable holds docs/performance.md's table to the shape
// docTable writes: a hand edit, a stale generator or a figure added to the
// harness but not yet in a run's table fails it.
func TestPerformanceDocTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range docTableProblems(doc) {
		t.Error(p)
	}
}

// TestDocTableRoundTrip: what docTable writes passes docTableProblems,
// and a row edited by hand does not.
func TestDocTableRoundTrip(t *testing.T) {
	run := runInfo{Mode: "full", Reps: 3, Started: time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC), Took: 5 * time.Minute,
		LoadStart: 0.6, LoadEnd: 1.2, Steal: 0.31, Commit: "abc123", Output: "bench-latest.txt"}
	var figs []figure
	for _, n := range append(append([]string{}, requiredFigures...), sizeFigures...) {
		figs = append(figs, figure{Name: n, Value: 0.5, Goal: ">= 0.6", Detail: "a | b", Reps: []float64{0.4, 0.5, 1234.5}, Loads: []float64{0.6, 0.7, 0.8}})
	}
	doc := []byte("# t\n\n" + docBegin + "\nold\n" + docEnd + "\nafter\n")
	out, err := replaceSection(doc, docTable(run, figs))
	if err != nil {
		t.Fatal(err)
	}
	if p := docTableProblems(out); len(p) > 0 {
		t.Fatalf("the generator's own table: %q\n%s", p, out)
	}
	if !bytes.HasSuffix(out, []byte(docEnd+"\nafter\n")) {
		t.Errorf("text after the section lost:\n%s", out)
	}
	edits := map[string]func(string) string{
		"a median typed":   func(s string) string { return strings.Replace(s, "| 0.500 |", "| 0.61 |", 1) },
		"a row removed":    func(s string) string { return strings.Replace(s, docRow(figs[0]), "", 1) },
		"a repetition cut": func(s string) string { return strings.Replace(s, "0.400 0.500 1234", "0.400 0.500", 1) },
	}
	for name, edit := range edits {
		if p := docTableProblems([]byte(edit(string(out)))); len(p) == 0 {
			t.Errorf("%s: no problem found", name)
		}
	}
}
