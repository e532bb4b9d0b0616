package moneycheck

import (
	"strings"
	"testing"
	"time"
)

func TestNoSaleWindows(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s := func(d time.Duration, status int, kind string) Op {
		return Op{Kind: kind, Status: status, At: t0.Add(d)}
	}
	ops := []Op{
		s(0, 201, "sale"),
		s(100*time.Millisecond, 201, "sale"),
		s(500*time.Millisecond, 0, "sale"),     // unanswered: no sale told
		s(900*time.Millisecond, 201, "refund"), // a refund is not a sale
		s(1200*time.Millisecond, 503, "sale"),  // refused for now
		s(4100*time.Millisecond, 201, "sale"),  // 4.0 s after the last: during the kill
		s(4200*time.Millisecond, 201, "sale"),  //
		s(5200*time.Millisecond, 201, "sale"),  // 1.0 s: within recovery of the kill
		s(9200*time.Millisecond, 201, "sale"),  // 4.0 s: long after every fault
		s(9300*time.Millisecond, 200, "sale"),  // a batch result
		s(12300*time.Millisecond, 201, "sale"), // 3.0 s: during the freeze and the cut
		s(20300*time.Millisecond, 201, "sale"), // 8.0 s: begun under the freeze alone
	}
	spans := []Span{
		{Kind: "posedge-kill", From: t0.Add(time.Second), To: t0.Add(3 * time.Second)},
		{Kind: "redis-freeze", From: t0.Add(10 * time.Second)},
		{Kind: "hq-kill", From: t0.Add(15 * time.Second), To: t0.Add(16 * time.Second)}, // late in a gap: not its cause
		{Kind: "wan-cut", From: t0.Add(11 * time.Second), To: t0.Add(12 * time.Second)},
	}
	ns := NoSaleWindows(ops, spans, 2*time.Second)
	if ns.Told != 9 {
		t.Fatalf("told %d, want 9", ns.Told)
	}
	want := map[string]time.Duration{"posedge-kill": 4000 * time.Millisecond, "none": 4000 * time.Millisecond,
		"redis-freeze": 8000 * time.Millisecond, "wan-cut": 8000 * time.Millisecond}
	for k, d := range want {
		if got := ns.ByKind[k].Len(); got != d {
			t.Errorf("%s: %v, want %v (%v)", k, got, d, ns.ByKind)
		}
	}
	if len(ns.ByKind) != len(want) {
		t.Errorf("kinds %v, want %v", ns.ByKind, want)
	}
	// The cut healed 0.3 s before the gap began: within recovery.
	if g := ns.Longest; g.Len() != 8*time.Second || strings.Join(g.Kinds, "+") != "redis-freeze+wan-cut" ||
		strings.Join(g.During, "+") != "hq-kill+redis-freeze+wan-cut" {
		t.Errorf("longest %v", ns.Longest)
	}
	if _, ok := ns.ByKind["hq-kill"]; ok {
		t.Errorf("a fault injected late in a gap is held against it: %v", ns.ByKind["hq-kill"])
	}
	if ks := strings.Join(ns.Kinds(), " "); ks != "redis-freeze wan-cut none posedge-kill" {
		t.Errorf("kinds in order: %v", ks)
	}
	t.Log(ns.Longest)
}
