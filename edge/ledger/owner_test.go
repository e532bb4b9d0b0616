package ledger

import "testing"

// An owner names its node (instanceOwner); anything else names none, and
// RecoverOrphans then takes its PROCESSING record as a dead process's.
func TestOwnerNode(t *testing.T) {
	for node := range 10 {
		o := instanceOwner(node)
		if got, ok := ownerNode(o); !ok || got != node {
			t.Errorf("ownerNode(%q) = %d, %v; want %d", o, got, ok, node)
		}
		if o == instanceOwner(node) {
			t.Errorf("two starts of node %d share the owner %q", node, o)
		}
	}
	for _, tc := range []struct {
		owner string
		node  int
		ok    bool
	}{
		{"n1-0123456789abcdef", 1, true},
		{"n12-0123456789abcdef", 12, true},
		{"0123456789abcdef", 0, false}, // before owners named their node
		{"crashed", 0, false},
		{"", 0, false},
		{"n-0123456789abcdef", 0, false},
		{"n01-0123456789abcdef", 0, false},
		{"n+1-0123456789abcdef", 0, false},
		{"n-1-0123456789abcdef", 0, false},
		{"x1-0123456789abcdef", 0, false},
		{"n1-0123", 0, false},
		{"n1_0123456789abcdef", 0, false},
	} {
		if got, ok := ownerNode(tc.owner); got != tc.node || ok != tc.ok {
			t.Errorf("ownerNode(%q) = %d, %v; want %d, %v", tc.owner, got, ok, tc.node, tc.ok)
		}
	}
}
