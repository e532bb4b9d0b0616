package configcheck

import (
	"errors"
	"testing"
)

// Both daemons' operators read the same shape: the count, then one line
// a problem, key first, the value quoted where it helps.
func TestProblemsWording(t *testing.T) {
	var ps Problems
	if ps.Err() != nil {
		t.Fatal("no problems is no error")
	}
	ps.Addf("store_id", "required")
	ps.Add("batch_size", "0", errors.New("must be between 1 and 10000"))
	want := "2 problem(s):\n  - store_id: required\n  - batch_size: \"0\": must be between 1 and 10000"
	if got := ps.Err().Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var p *Problem
	if !errors.As(ps.Err(), &p) || p.Key != "store_id" {
		t.Errorf("errors.As finds %+v, want the first problem", p)
	}
}
