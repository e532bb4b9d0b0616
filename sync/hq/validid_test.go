package hq

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidIDsAgreeWithPatterns: validStoreID and validFlowNo accept
// exactly what the contract's patterns do (the regexps they replaced).
func TestValidIDsAgreeWithPatterns(t *testing.T) {
	storeID := regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	flowNo := regexp.MustCompile(`^[0-9]{1,32}$`)
	for _, s := range []string{
		"", "S001", "s-01_A", "0", strings.Repeat("7", 32), strings.Repeat("7", 33), strings.Repeat("a", 32),
		strings.Repeat("a", 33), "S 01", "S.01", "S01\n", "\nS01", "Ş01", "S01/", "a:b", "12a", "-1", "+1", "1e3",
		"S\x0001", "０１", "_", "--", "123456789012345678901234567890123",
	} {
		if got, want := validStoreID(s), storeID.MatchString(s); got != want {
			t.Errorf("validStoreID(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := validFlowNo(s), flowNo.MatchString(s); got != want {
			t.Errorf("validFlowNo(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

// FuzzValidIDsAgreeWithPatterns: the same, for any string.
func FuzzValidIDsAgreeWithPatterns(f *testing.F) {
	storeID := regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)
	flowNo := regexp.MustCompile(`^[0-9]{1,32}$`)
	for _, s := range []string{"", "S001", "12", "S 01", strings.Repeat("9", 33)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if validStoreID(s) != storeID.MatchString(s) || validFlowNo(s) != flowNo.MatchString(s) {
			t.Fatalf("%q: validStoreID %v, validFlowNo %v; the patterns say %v, %v",
				s, validStoreID(s), validFlowNo(s), storeID.MatchString(s), flowNo.MatchString(s))
		}
	})
}
