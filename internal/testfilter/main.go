package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

func main() {
	failed, err := filter(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testfilter:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

// filter copies the summary of in to out and reports whether anything
// failed. Lines that are not JSON (build errors) are printed as they come.
func filter(in io.Reader, out io.Writer) (failed bool, err error) {
	outputs := map[string]*strings.Builder{} // package + "\x00" + test
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			b := outputs[key]
			if b == nil {
				b = &strings.Builder{}
				outputs[key] = b
			}
			b.WriteString(e.Output)
			// A subtest's output belongs to its top-level test's too,
			// so a failure shows all of it.
			if top, _, sub := strings.Cut(e.Test, "/"); sub {
				tk := e.Package + "\x00" + top
				if outputs[tk] == nil {
					outputs[tk] = &strings.Builder{}
				}
				outputs[tk].WriteString(e.Output)
			}
		case "pass", "skip", "fail":
			text := ""
			if b := outputs[key]; b != nil {
				text = b.String()
			}
			delete(outputs, key)
			top := !strings.Contains(e.Test, "/")
			switch {
			case e.Test == "" && e.Action == "fail":
				failed = true
				// A test still running when its package failed (a
				// timeout's panic, a crash) never got its own end: its
				// output, the goroutine dump included, says which one hung.
				fmt.Fprintf(out, "%s", unfinished(outputs, e.Package))
				fmt.Fprintf(out, "%sFAIL %s (%.1fs)\n", text, e.Package, e.Elapsed)
			case e.Test == "" && e.Action == "pass":
				fmt.Fprintf(out, "ok   %s (%.1fs)\n", e.Package, e.Elapsed)
			case e.Test == "":
				fmt.Fprintf(out, "?    %s (no tests)\n", e.Package)
			case e.Action == "fail" && top:
				failed = true
				fmt.Fprintf(out, "%s", text)
			case e.Action == "skip" && top:
				fmt.Fprintf(out, "--- SKIP %s %s: %s\n", e.Package, e.Test, skipReason(text))
			case e.Action == "pass" && top:
				fmt.Fprintf(out, "--- PASS %s %s (%.1fs)\n", e.Package, e.Test, e.Elapsed)
			}
		}
	}
	return failed, sc.Err()
}

// unfinished takes out of outputs the output of every top-level test of
// pkg that has not ended, in name order.
func unfinished(outputs map[string]*strings.Builder, pkg string) string {
	var names []string
	for key := range outputs {
		p, test, _ := strings.Cut(key, "\x00")
		if p == pkg && test != "" && !strings.Contains(test, "/") {
			names = append(names, test)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, test := range names {
		fmt.Fprintf(&b, "--- UNFINISHED %s %s:\n%s", pkg, test, outputs[pkg+"\x00"+test].String())
	}
	for key := range outputs {
		if strings.HasPrefix(key, pkg+"\x00") {
			delete(outputs, key)
		}
	}
	return b.String()
}

// skipReason is the last line a skipped test printed before "--- SKIP".
func skipReason(text string) string {
	var last string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- SKIP") {
			last = l
		}
	}
	return last
}
