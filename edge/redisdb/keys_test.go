package redisdb_test

import (
	"testing"

	"github.com/posedge/posedge/edge/redisdb"
)

// The key layout is part of what a store's Redis holds across upgrades
// (a daemon restarted on a new version reads the keys the old one wrote):
// every name is pinned here, spelt out.
func TestKeyLayout(t *testing.T) {
	k := redisdb.NewKeys("S1")
	tests := []struct{ got, want string }{
		{k.Idem("T01", "k1"), "pe:{S1}:idem:T01:k1"},
		{k.Seq(), "pe:{S1}:seq"},
		{k.Daily("20261201"), "pe:{S1}:daily:20261201"},
		{k.Hourly("20261201"), "pe:{S1}:hourly:20261201"},
		{k.Token("pt_ab"), "pe:{S1}:token:pt_ab"},
		{k.Refunded("1000000000000001"), "pe:{S1}:refunded:1000000000000001"},
		{k.Item("A-1"), "pe:{S1}:item:A-1"},
		{k.Adjustment("a1"), "pe:{S1}:adj:a1"},
		{k.Lock("reconcile"), "pe:{S1}:lock:reconcile"},
		{redisdb.Fence(k.Lock("reconcile")), "pe:{S1}:lock:reconcile:fence"},
		{k.Alive(), "pe:{S1}:alive"},
		{k.Repaired(), "pe:{S1}:repaired"},
		{k.RateStore(), "pe:{S1}:rl:s"},
		{k.RateTerminal("T01"), "pe:{S1}:rl:t:T01"},
		{k.RateAction("T01", "pay"), "pe:{S1}:rl:a:T01:pay"},
		{k.RateSync(), "pe:{S1}:rl:sync"},
		{k.Promo(), "pe:{S1}:promo"},
		{k.IdemScan(), "pe:{S1}:idem:*"},
		{redisdb.Prefix("S1"), "pe:{S1}:"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("key %q, want %q", tt.got, tt.want)
		}
	}
}

// IdemOf reads back what Idem built, and only an idempotency key of the
// same store (the terminal and key are read only when ok).
func TestIdemOf(t *testing.T) {
	k := redisdb.NewKeys("S1")
	tests := []struct {
		key        string
		term, idem string
		ok         bool
	}{
		{k.Idem("T01", "k1"), "T01", "k1", true},
		{k.Idem("T01", "a:b"), "T01", "a:b", true}, // the key may hold a colon, the terminal id cannot
		{redisdb.NewKeys("S2").Idem("T01", "k1"), "", "", false},
		{k.Token("k1"), "", "", false},
		{"pe:{S1}:idem:T01", "", "", false},
	}
	for _, tt := range tests {
		term, idem, ok := k.IdemOf(tt.key)
		if ok != tt.ok || (ok && (term != tt.term || idem != tt.idem)) {
			t.Errorf("IdemOf(%q) = %q, %q, %v; want %q, %q, %v", tt.key, term, idem, ok, tt.term, tt.idem, tt.ok)
		}
	}
}
