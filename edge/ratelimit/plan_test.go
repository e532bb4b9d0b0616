package ratelimit

import (
	"slices"
	"strconv"
	"testing"

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/redis/go-redis/v9"
)

// A decision's plan (levels, keys, limits) is built once per terminal and
// action and kept; each terminal and action has its own, with its own
// keys, and no more than maxPlans are kept.
func TestPlansKeptPerTerminalAndAction(t *testing.T) {
	l := newTestLimiter(t, redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), testConfig(), nil)
	k := redisdb.NewKeys("S001")
	keys := func(p *plan) []string {
		var out []string
		for _, v := range p.lv {
			out = append(out, v.key)
		}
		return out
	}
	cases := []struct {
		term, action string
		want         []string
	}{
		{"T01", ActionScan, []string{k.RateStore(), k.RateTerminal("T01"), k.RateAction("T01", ActionScan)}},
		{"T01", ActionPay, []string{k.RateStore(), k.RateTerminal("T01"), k.RateAction("T01", ActionPay)}},
		{"T01", "", []string{k.RateStore(), k.RateTerminal("T01")}},
		{"T02", ActionScan, []string{k.RateStore(), k.RateTerminal("T02"), k.RateAction("T02", ActionScan)}},
	}
	seen := map[*plan]bool{}
	for _, c := range cases {
		p := l.plan(c.term, c.action)
		if got := keys(p); !slices.Equal(got, c.want) {
			t.Errorf("plan(%q, %q) keys %v, want %v", c.term, c.action, got, c.want)
		}
		if l.plan(c.term, c.action) != p {
			t.Errorf("plan(%q, %q) built again: not kept", c.term, c.action)
		}
		if seen[p] {
			t.Errorf("plan(%q, %q) shared with another terminal or action", c.term, c.action)
		}
		seen[p] = true
	}
	for i := 0; i < maxPlans && l.plans.n < maxPlans; i++ {
		l.plan("F"+strconv.Itoa(i), "")
	}
	p := l.plan("ONEMORE", ActionScan)
	if l.plans.n != maxPlans || l.plan("ONEMORE", ActionScan) == p {
		t.Errorf("%d plans kept, the one past maxPlans (%d) kept too", l.plans.n, maxPlans)
	}
}
