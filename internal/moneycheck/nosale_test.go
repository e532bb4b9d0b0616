package moneycheck

import (
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
	}
	spans := []Span{
		{Kind: "posedge-kill", From: t0.Add(time.Second), To: t0.Add(3 * time.Second)},
		{Kind: "redis-freeze", From: t0.Add(10 * time.Second)},
		{Kind: "wan-cut", From: t0.Add(11 * time.Second), To: t0.Add(12 * time.Second)},
	}
	ns := NoSaleWindows(ops, spans, 2*time.Second)
	if ns.Told != 8 {
		t.Fatalf("told %d, want 8", ns.Told)
	}
	want := map[string]time.Duration{"posedge-kill": 4000 * time.Millisecond, "none": 4000 * time.Millisecond,
		"redis-freeze": 3000 * time.Millisecond, "wan-cut": 3000 * time.Millisecond}
	for k, d := range want {
		if got := ns.ByKind[k].Len(); got != d {
			t.Errorf("%s: %v, want %v (%v)", k, got, d, ns.ByKind)
		}
	}
	if len(ns.ByKind) != len(want) {
		t.Errorf("kinds %v, want %v", ns.ByKind, want)
	}
	if ns.Longest.Len() != 4*time.Second || ns.Longest.Kinds[0] != "posedge-kill" {
		t.Errorf("longest %v", ns.Longest)
	}
	if g := ns.ByKind["wan-cut"]; len(g.Kinds) != 2 || g.Kinds[0] != "redis-freeze" || g.Kinds[1] != "wan-cut" {
		t.Errorf("the last gap's kinds: %v", g.Kinds)
	}
	if ks := ns.Kinds(); ks[0] != "none" || ks[1] != "posedge-kill" {
		t.Errorf("kinds in order: %v", ks)
	}
	t.Log(ns.Longest)
}
