package status

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// width is the screen the human form fits: every line at most this many
// columns, long details and hints wrapped under their column.
const width = 100

// Render writes the one-screen human form of a report: a header, then one
// line per check with its level (OK, WARN, CRIT, UNKNOWN), its name and
// what was seen, and how long ago when the fact was probed rather than
// read for this report ("(seen 2s ago)"); under a check that is not OK,
// "→" and what to do.
func Render(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "posedge %s  store %s  mode %s  status %s\n", orDash(r.Version), orDash(r.StoreID), r.Mode, strings.ToUpper(string(r.Status)))
	const indent = 2 + 7 + 2 + 14 + 1 // "  " level "  " name " "
	pad := strings.Repeat(" ", indent)
	for _, c := range r.Checks {
		detail := c.Detail
		if c.AgeSeconds != nil {
			detail += " (seen " + human(time.Duration(*c.AgeSeconds)*time.Second) + " ago)"
		}
		lines := wrap(detail, width-indent)
		fmt.Fprintf(&b, "  %-7s  %-14s %s\n", strings.ToUpper(string(c.Status)), c.Name, lines[0])
		for _, l := range lines[1:] {
			b.WriteString(pad + l + "\n")
		}
		if c.Hint != "" && c.Status != OK {
			for i, l := range wrap(c.Hint, width-indent-2) {
				if i == 0 {
					b.WriteString(pad + "→ " + l + "\n")
				} else {
					b.WriteString(pad + "  " + l + "\n")
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrap splits s into lines of at most n columns at spaces (a word longer
// than n stays whole); newlines in s are kept.
func wrap(s string, n int) []string {
	var out []string
	for _, para := range strings.Split(s, "\n") {
		lead := para[:len(para)-len(strings.TrimLeft(para, " "))] // kept, as in "  - key: problem"
		line := ""
		for _, word := range strings.Fields(para) {
			switch {
			case line == "":
				line = lead + word
			case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= n:
				line += " " + word
			default:
				out = append(out, line)
				line = lead + word
			}
		}
		out = append(out, line)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
