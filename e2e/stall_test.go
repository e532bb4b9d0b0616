package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/status"
	"github.com/posedge/posedge/internal/testenv"
)

// TestHungHQIsNotOK: HQ's NATS stops answering while the TCP connection
// stays open (a black-holed WAN, or a hung server: what a SIGSTOP looks
// like from the store). Tills go on selling the realistic mix; `posedge
// status` must not say OK: after 15 s without an acknowledgement it is
// WARN (exit 1) with hq.stalled, the link still counted as connected,
// and advice that names HQ. Once the link passes again the money audit holds (every
// transaction at HQ once, no conflict, Redis's stock and counters) and
// status is OK again.
func TestHungHQIsNotOK(t *testing.T) {
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
	during, _ := mixUntil(t, s, 4, "hung", seed+1, 12)

	var st statusJSON
	var code int
	var out string
	testenv.WaitFor(t, 60*time.Second, "status warn with hq.stalled", func() bool {
		st, code, out = posedgeStatus(t, s)
		if st.HQ.Stalled && time.Since(hung) < status.StallAfter {
			t.Fatalf("stalled %v after the link hung, before %v:\n%s", time.Since(hung).Round(time.Millisecond), status.StallAfter, out)
		}
		return st.HQ.Stalled
	})
	t.Logf("stalled reported %v after the link hung", time.Since(hung).Round(100*time.Millisecond))
	if code != 1 || st.Status != "warn" || !st.HQ.Connected || st.HQ.Backlog < int64(len(during)) || st.Mode != "normal" {
		t.Fatalf("status while HQ hangs: exit %d\n%s", code, out)
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
	if got, _ := s.HQRows(); len(got) != len(before) {
		t.Fatalf("HQ holds %d transactions while hung, want the %d sent before", len(got), len(before))
	}

	s.NATSProxy.Set(testenv.Pass, 0)
	auditMix(t, s, append(before, during...))
	testenv.WaitFor(t, 30*time.Second, "status ok again once HQ answers", func() bool {
		st, code, out = posedgeStatus(t, s)
		return code == 0 && st.Status == "ok" && !st.HQ.Stalled && st.HQ.Backlog == 0
	})
}
