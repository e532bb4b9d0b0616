package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// syncLimited are the realistic mix's loose limits with a tight replay
// budget: two batches a second for the whole store (and two batch
// uploads a second per terminal, which the tills retry when refused).
const syncLimited = `  store:    {limit: 100000, window: "1s"}
  terminal: {limit: 100000, window: "1s"}
  actions:
    pay:    {limit: 100000, window: "1s"}
    scan:   {limit: 100000, window: "1s"}
    refund: {limit: 100000, window: "1s"}
    sync:   {limit: 2, window: "1s"}
  terminal_bytes: {limit: 1073741824, window: "1h"}
`

// statusJSON is the part of `posedge status --json` these tests read.
type statusJSON struct {
	Status string `json:"status"`
	Mode   string `json:"mode"`
	HQ     struct {
		Connected bool  `json:"connected"`
		Stalled   bool  `json:"stalled"`
		Backlog   int64 `json:"backlog"`
		OldestAge int64 `json:"oldest_unsynced_age_seconds"`
	} `json:"hq"`
	Checks []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Detail string `json:"detail"`
		Hint   string `json:"hint"`
	} `json:"checks"`
}

// posedgeStatus runs `posedge status --json` as a technician would and
// returns the report and the exit code.
func posedgeStatus(t *testing.T, s *testenv.Store) (statusJSON, int, string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(bin, "posedge"), "status", "--config", s.Config, "--json").Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("posedge status: %v", err)
	}
	var st statusJSON
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("posedge status --json printed %q: %v", out, err)
	}
	return st, code, string(out)
}

// sellN makes n sales of item barcode from every terminal in turn, four
// at a time, and returns their flow numbers.
func sellN(t *testing.T, s *testenv.Store, prefix, barcode string, n int, price int64) []string {
	t.Helper()
	flows := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			term := s.Terminals[i%len(s.Terminals)]
			r := s.Sale(term, fmt.Sprintf("%s-%d", prefix, i), barcode, 1, price)
			if r.Status != 201 {
				t.Errorf("sale %d: %d %s %v", i, r.Status, r.Body, r.Err)
				return
			}
			flows[i] = r.Flow()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return flows
}

// TestWANDownBacklogThenReplayWithinTheSyncBudget: NATS (HQ's side of the
// WAN) is stopped while four tills sell the realistic mix (multi-line
// sales, token sales, refunds, batch uploads) until about 120
// transactions are told. `posedge status` shows exactly that backlog and
// WARN (exit 1); once NATS is back, the money audit holds (every
// transaction at HQ once with the same net cents, no conflict, Redis's
// stock and counters), and the replay keeps to the store's sync policy:
// batches of 10 at 2 batches per second cannot drain N transactions
// (ceil(N/10) batches) faster than the policy's windows allow.
func TestWANDownBacklogThenReplayWithinTheSyncBudget(t *testing.T) {
	const about, batch, perSec = 120, 10, 2
	seed := testSeed(t)
	s := startStore(t, testenv.StoreOptions{Limits: syncLimited, BatchSize: batch})
	putMixItems(s)

	// Connected and synced first: status OK.
	before, _ := mixUntil(t, s, 4, "before", seed, 10)
	s.WaitHQ(flowsOf(before), 60*time.Second)
	testenv.WaitFor(t, 30*time.Second, "status ok with HQ connected and nothing to send", func() bool {
		st, code, _ := posedgeStatus(t, s)
		return code == 0 && st.Status == "ok" && st.HQ.Connected && st.HQ.Backlog == 0
	})

	s.NATS.Stop()
	testenv.WaitFor(t, 30*time.Second, "the daemon to see HQ unreachable", func() bool {
		st, _, _ := posedgeStatus(t, s)
		return !st.HQ.Connected
	})
	during, mt := mixUntil(t, s, 4, "wan", seed+1, about)
	n := len(during)
	t.Logf("during the outage: %s", mt.summary())

	st, code, out := posedgeStatus(t, s)
	if code != 1 || st.Status != "warn" || st.HQ.Connected || st.HQ.Backlog != int64(n) || st.Mode != "normal" {
		t.Fatalf("status during the outage (%d told): exit %d\n%s", n, code, out)
	}
	for _, c := range st.Checks {
		if c.Status != "ok" && c.Name != "hq" {
			t.Fatalf("check %s is %s during a WAN outage (only hq may warn): %s", c.Name, c.Status, out)
		}
	}
	if got, _ := s.HQRows(); len(got) != len(before) {
		t.Fatalf("HQ holds %d transactions while unreachable, want the %d sent before", len(got), len(before))
	}

	s.NATS.Start()
	back := time.Now()
	// The technician's "sync now" cuts short the client's reconnect
	// backoff, which grew during the outage; the budget still applies.
	if out, err := exec.Command(filepath.Join(bin, "posedge"), "sync", "now", "--config", s.Config).CombinedOutput(); err != nil {
		t.Fatalf("posedge sync now: %v\n%s", err, out)
	}
	s.WaitHQ(flowsOf(during), 90*time.Second)
	took := time.Since(back)

	batches := (n + batch - 1) / batch
	// The first two batches go at once; each later pair waits a window.
	// Smaller batches than 10 would only take longer.
	least := time.Duration((batches+perSec-1)/perSec-1) * time.Second
	t.Logf("%d transactions in batches of %d at %d batches/s: at HQ %v after NATS came back (policy's least %v)", n, batch, perSec, took.Round(10*time.Millisecond), least)
	if took < least {
		t.Fatalf("the backlog drained in %v: faster than the sync policy allows (%v)", took, least)
	}
	auditMix(t, s, append(before, during...))
	testenv.WaitFor(t, 30*time.Second, "status ok again with the backlog drained", func() bool {
		st, code, _ := posedgeStatus(t, s)
		return code == 0 && st.Status == "ok" && st.HQ.Connected && st.HQ.Backlog == 0
	})
	if n := s.JournalRows("state != 'acked'"); n != 0 {
		t.Fatalf("%d journal rows not acked after the drain", n)
	}
}

// flowsOf are the flow numbers of the transactions told.
func flowsOf(told []mixTxn) []string {
	flows := make([]string, len(told))
	for i, tx := range told {
		flows[i] = tx.FlowNo
	}
	return flows
}
