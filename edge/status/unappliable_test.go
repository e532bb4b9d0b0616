package status

import (
	"strings"
	"testing"
)

// The operator sees which transactions Redis cannot apply, by flow number.
func TestUnappliableNamesItsFlowNumbers(t *testing.T) {
	f := healthy()
	f.Journal.Unappliable = []string{"2000000000000007", "2000000000000009"}
	r := Evaluate(f, thresholds())
	for _, c := range r.Checks {
		if c.Name == "unappliable" {
			if c.Status != Warn || !strings.Contains(c.Detail, "2000000000000007") || !strings.Contains(c.Detail, "2000000000000009") ||
				!strings.Contains(c.Hint, "posedge journal quarantine") {
				t.Fatalf("%+v", c)
			}
			return
		}
	}
	t.Fatalf("no unappliable check: %+v", r.Checks)
}
