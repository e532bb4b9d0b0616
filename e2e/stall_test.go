package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/status"
	"github.com/posedge/posedge/internal/testenv"
)

// TestHungHQIsNotOK: HQ's NATS stops answering while the TCP connection
// stays open (a black-holed WAN, or a hung server: what a SIGSTOP looks
// like from the store) for 20 s (60 s with POSEDGE_LONG=1), while four
// tills sell the realistic mix through the whole hole. `posedge status`
// must not say OK: after 15 s without an acknowledgement it is WARN
// (exit 1) with hq.stalled, the link still counted as connected, a
// backlog of at least what the tills were told, and advice that names
// HQ. HQ gets nothing through the hole. Once the link heals the money
// audit holds (every sale, refund and batch told at HQ once with the same
// net cents, no conflict, Redis's stock and counters) and status is OK
// again. (Status and money were two tests with a hole each; one hole
// serves both.)
func TestHungHQIsNotOK(t *testing.T) {
	hole := 20 * time.Second
	if os.Getenv("POSEDGE_LONG") != "" {
		hole = 60 * time.Second
	}
	seed := testSeed(t)
	s := startStore(t, testenv.StoreOptions{Limits: looseMix, NATSProxy: true})
	putMixItems(s)
	before, _ := mixUntil(t, s, 4, "before", seed, 10)
	s.WaitHQ(flowsOf(before), 60*time.Second)
	testenv.WaitFor(t, 30*time.Second, "status ok with HQ connected and nothing to send", func() bool {
		st, code, _ := posedgeStatus(t, s)
		return code == 0 && st.Status == "ok" && st.HQ.Connected && st.HQ.Backlog == 0
	})

	s.NATSProxy.Set(testenv.BlackHole, 0)
	hung := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	mt := runMix(t, ctx, s, 4, "hung", seed+1)

	var st statusJSON
	var code, told int
	var out string
	testenv.WaitFor(t, 60*time.Second, "status warn with hq.stalled", func() bool {
		told = len(mt.snapshot())
		st, code, out = posedgeStatus(t, s)
		if st.HQ.Stalled && time.Since(hung) < status.StallAfter {
			t.Fatalf("stalled %v after the link hung, before %v:\n%s", time.Since(hung).Round(time.Millisecond), status.StallAfter, out)
		}
		return st.HQ.Stalled
	})
	t.Logf("stalled reported %v after the link hung, %d transactions told by then", time.Since(hung).Round(100*time.Millisecond), told)
	if code != 1 || st.Status != "warn" || !st.HQ.Connected || st.HQ.Backlog < int64(told) || st.Mode != "normal" {
		t.Fatalf("status while HQ hangs (%d told): exit %d\n%s", told, code, out)
	}
	for _, c := range st.Checks {
		switch {
		case c.Name == "hq" && (c.Status != "warn" || !strings.Contains(c.Detail, "nothing acknowledged for") ||
			!strings.Contains(c.Hint, "check the WAN and HQ")):
			t.Fatalf("hq check while HQ hangs: %+v", c)
		case c.Name != "hq" && c.Status != "ok":
			t.Fatalf("check %s is %s while HQ hangs (only hq may warn):\n%s", c.Name, c.Status, out)
		}
	}

	time.Sleep(time.Until(hung.Add(hole)))
	hq, _ := s.HQRows()
	told = len(mt.snapshot())
	if len(hq) != len(before) {
		t.Fatalf("HQ holds %d transactions after the hole, %d before it: the link was not black-holed", len(hq), len(before))
	}
	s.NATSProxy.Set(testenv.Pass, 0)
	time.Sleep(time.Second)
	cancel()
	during := mt.wait()
	t.Logf("%s; %d told by the end of the %v hole", mt.summary(), told, hole)
	auditMix(t, s, append(before, during...))
	testenv.WaitFor(t, 30*time.Second, "status ok again once HQ answers", func() bool {
		st, code, out = posedgeStatus(t, s)
		return code == 0 && st.Status == "ok" && !st.HQ.Stalled && st.HQ.Backlog == 0
	})
}
