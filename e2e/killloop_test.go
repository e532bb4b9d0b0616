package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// paced limits: each till pays at most 100 times a second, so a run
// journals hundreds of transactions (always some in flight) and audits
// stay quick; HQ replay is not paced.
const paced = `  store:    {limit: 100000, window: "1s"}
  terminal: {limit: 100000, window: "1s"}
  actions:
    pay:    {limit: 100, window: "1s"}
    scan:   {limit: 100000, window: "1s"}
    refund: {limit: 100000, window: "1s"}
    sync:   {limit: 100000, window: "1s"}
  terminal_bytes: {limit: 1073741824, window: "1h"}
`

// The daemon kill -9 test repeated at random points: each run, four tills
// sell the realistic mix (multi-line sales, token sales, refunds,
// batches), posedge is killed at a random moment, restarted, the tills
// sell on, then everything told so far is audited (journal, HQ, HQ's
// conflicts, Redis stock and counters, moneycheck over the tills'
// history). 8 runs by default (well under 2 minutes);
// POSEDGE_KILL_RUNS=100 for a soak; POSEDGE_SEED replays one.
//
// The loop is for one window: a kill between a sale's Redis script and
// its journal commit. Every Redis answer is held killWindow on its way
// back (the fault proxy's DelayAnswers), so a script has run while its
// daemon still waits for the answer most of the time a sale is in
// flight; the test requires that some kill landed there (a journal row
// "recovered"), not just that the end state is right.
func TestDaemonKillLoop(t *testing.T) {
	runs := 8
	if v, err := strconv.Atoi(os.Getenv("POSEDGE_KILL_RUNS")); err == nil && v > 0 {
		runs = v
	}
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	s := startStore(t, testenv.StoreOptions{Limits: paced, RedisProxy: true})
	putMixItems(s)
	var all []mixTxn
	start := time.Now()
	for run := 1; run <= runs; run++ {
		t.Run(fmt.Sprintf("run%d", run), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			mt := runMix(t, ctx, s, 4, fmt.Sprintf("loop%d", run), seed+uint64(run)*7919)
			after := 200*time.Millisecond + time.Duration(rng.Int64N(int64(1200*time.Millisecond)))
			// Answers are held only while the tills sell towards the
			// kill: held through a restart too, start-up recovery (a
			// Redis round trip after another) outlasted the 30 s
			// readiness wait by the second run.
			s.RedisProxy.Set(testenv.DelayAnswers, killWindow)
			time.Sleep(after) // a random point in the selling
			s.Edge.Kill()
			s.RedisProxy.Set(testenv.Pass, 0)
			s.StartEdge()
			time.Sleep(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
			cancel()
			got := mt.wait()
			all = append(all, got...)
			auditMix(t, s, all)
			t.Logf("killed after %v: %s this run, %d in all, audited", after.Round(time.Millisecond), mt.summary(), len(all))
		})
		if t.Failed() {
			t.FailNow()
		}
	}
	// The window the loop is for: a kill between a sale's Redis script
	// and its journal commit leaves the sale in Redis only; the retry
	// or the start-up scan journals it as "recovered" (and the audits
	// above found it told once, at HQ once, stock and counters exact).
	recovered := s.JournalRows("mode = 'recovered'")
	scans := logCount(t, s, "journaled a sale a crash left only in redis")
	t.Logf("%d runs, %d transactions told, each audited against the journal, HQ, Redis and moneycheck (%v); "+
		"the crash between script and journal taken %d times (journal rows 'recovered'; the start-up scan logged %d journalings of such sales)",
		runs, len(all), time.Since(start).Round(time.Second), recovered, scans)
	if recovered == 0 {
		t.Fatalf("no kill landed between a script and its journal commit in %d runs (Redis answers held %v): the loop did not test its window", runs, killWindow)
	}
	// Each journaling the scan logs is a row of its own: a till's retry
	// that journaled the sale first is not the scan's (it logged such
	// races too, 5 journalings for 3 rows, until 2026-12-07).
	if scans > recovered {
		t.Fatalf("the start-up scan logged %d journalings, the journal holds %d recovered rows", scans, recovered)
	}
	if rep := reconcileNow(t, s); num(rep["differences"]) != 0 {
		t.Fatalf("reconciliation found differences after the kill loop: %v", rep)
	}
	// Every start-up reconciliation ran while tills sold: none may have
	// "corrected" anything (nothing was lost, so any correction is wrong).
	if n := logCount(t, s, "corrected from the journal"); n != 0 {
		t.Fatalf("%d corrections by start-up reconciliations under load", n)
	}
}

// killWindow is how long each Redis answer is held on its way back in the
// kill loop: a sale's Redis calls then take most of its time, so a random
// kill often finds a script run and not yet journaled (13 of 8 runs
// here). At 150 ms a new connection's handshake and the first call
// together passed redis.timeout (300 ms) and the daemon stayed degraded.
const killWindow = 50 * time.Millisecond

func journalDB(t *testing.T, s *testenv.Store) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Dir, "journal.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reconcileNow asks the daemon for a reconciliation of today (waiting
// while the start-up one holds the lock) and returns its report.
func reconcileNow(t *testing.T, s *testenv.Store) map[string]any {
	t.Helper()
	var rep map[string]any
	testenv.WaitFor(t, 60*time.Second, "an on-demand reconciliation", func() bool {
		r := s.Admin("POST", "/admin/v1/reconcile", nil)
		if r.Status == 200 {
			rep = r.JSON()
			return true
		}
		if r.Status != 409 && r.Status != 503 {
			t.Fatalf("POST /admin/v1/reconcile: %d %s", r.Status, r.Body)
		}
		return false
	})
	t.Logf("reconciliation: %v", rep)
	return rep
}

// metric sums every series of a metric on /metrics.
func metric(t *testing.T, s *testenv.Store, name string) float64 {
	t.Helper()
	r := s.Admin("GET", "/metrics", nil)
	if r.Status != 200 {
		t.Fatalf("GET /metrics: %d", r.Status)
	}
	return testenv.SumMetric(string(r.Body), name)
}

// logCount counts lines of the daemon's log (every run of it) holding s.
func logCount(t *testing.T, s *testenv.Store, sub string) int {
	t.Helper()
	b, err := os.ReadFile(s.Edge.Log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), sub)
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// snapshot is what the tills were told so far, while they sell on.
func (tl *tills) snapshot() []told {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]told(nil), tl.told...)
}
