package main

import (
	"strings"
	"testing"
)

// The Windows service runs as its virtual account, and the data folder's
// access list names Administrators, SYSTEM and that account only, with
// the inherited entries (every local user may read) removed.
func TestWindowsAccountAndDataACL(t *testing.T) {
	st := windowsSettings()
	if st.Account != `NT SERVICE\posedge` {
		t.Errorf("service account %q, want the virtual account NT SERVICE\\posedge", st.Account)
	}
	args := dataACLArgs(`C:\ProgramData\posedge`, st.Account)
	got := strings.Join(args, " ")
	for _, want := range []string{`C:\ProgramData\posedge /inheritance:r`, "*S-1-5-32-544:(OI)(CI)F", "*S-1-5-18:(OI)(CI)F",
		`NT SERVICE\posedge:(OI)(CI)M`, "/T"} {
		if !strings.Contains(got, want) {
			t.Errorf("icacls %s: lacks %q", got, want)
		}
	}
	if strings.Contains(got, "Users") || strings.Contains(got, "S-1-5-32-545") || strings.Contains(got, "Everyone") {
		t.Errorf("icacls %s grants ordinary users", got)
	}
}
