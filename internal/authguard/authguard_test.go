package authguard

import (
	"strconv"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv/fakeclock"
)

func TestGuard(t *testing.T) {
	type step struct {
		advance    time.Duration
		addr       string
		fail       bool // else: check Blocked
		blocked    bool
		retryAfter time.Duration
	}
	const a, b = "192.0.2.1", "192.0.2.2"
	tenFails := func(every time.Duration) []step {
		var s []step
		for i := 0; i < 10; i++ {
			s = append(s, step{advance: every, addr: a, fail: true})
		}
		return s
	}
	cat := func(parts ...[]step) []step {
		var s []step
		for _, p := range parts {
			s = append(s, p...)
		}
		return s
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"nine failures do not block", cat(tenFails(time.Second)[:9], []step{{addr: a}})},
		{"ten in a minute block for the rest of it", cat(tenFails(time.Second), []step{
			{addr: a, blocked: true, retryAfter: 51 * time.Second},
			{addr: b},
			{advance: 50 * time.Second, addr: a, blocked: true, retryAfter: time.Second},
			{advance: time.Second, addr: a},
		})},
		{"failures while blocked do not prolong it", cat(tenFails(0), []step{
			{advance: 30 * time.Second, addr: a, fail: true},
			{addr: a, blocked: true, retryAfter: 30 * time.Second},
			{advance: 30 * time.Second, addr: a},
		})},
		{"the window slides", cat(tenFails(0)[:5], []step{{advance: 30 * time.Second}}, tenFails(time.Second)[:5], []step{
			{addr: a, blocked: true, retryAfter: 25 * time.Second},
			{advance: 25 * time.Second, addr: a},
		}, tenFails(0)[:5], []step{
			{addr: a, blocked: true, retryAfter: 31 * time.Second},
		})},
		{"spread over more than a minute never blocks", cat(tenFails(7*time.Second), []step{{addr: a}})},
		{"other addresses unaffected", cat(tenFails(0), []step{{addr: b}, {addr: "2001:db8::1"}, {addr: a, blocked: true, retryAfter: time.Minute}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := fakeclock.New()
			g := New(10, time.Minute, clk.Now)
			for i, s := range tt.steps {
				clk.Advance(s.advance)
				if s.addr == "" {
					continue
				}
				if s.fail {
					g.Fail(s.addr)
					continue
				}
				blocked, ra := g.Blocked(s.addr)
				if blocked != s.blocked || ra != s.retryAfter {
					t.Fatalf("step %d: Blocked(%s) = %v, %v; want %v, %v", i, s.addr, blocked, ra, s.blocked, s.retryAfter)
				}
			}
		})
	}
}

func TestGuardForgetsIdleAddresses(t *testing.T) {
	clk := fakeclock.New()
	g := New(10, time.Minute, clk.Now)
	for i := 0; i < 1000; i++ {
		g.Fail("198.51.100." + strconv.Itoa(i))
	}
	clk.Advance(2 * time.Minute)
	g.Fail("203.0.113.9")
	if n := len(g.fails); n != 1 {
		t.Fatalf("%d addresses kept after their window, want 1", n)
	}
}
