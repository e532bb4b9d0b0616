package status

import (
	"fmt"
	"io"
	"strings"
)

// Render writes the one-screen human form of a report.
func Render(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "posedge %s  store %s  mode %s  status %s\n", orDash(r.Version), orDash(r.StoreID), r.Mode, strings.ToUpper(r.Status))
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "  %-4s  %-14s %s\n", strings.ToUpper(c.Status), c.Name, c.Detail)
		if c.Hint != "" && c.Status != OK {
			fmt.Fprintf(&b, "        %-14s → %s\n", "", c.Hint)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
