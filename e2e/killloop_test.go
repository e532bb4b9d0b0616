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

// paced limits: each till sells at most 100 a second, so a run journals
// hundreds of sales (always some in flight) and audits stay quick; HQ
// replay is not paced.
const paced = `  store:    {limit: 100000, window: "1s"}
  terminal: {limit: 100000, window: "1s"}
  actions:
    pay:    {limit: 100, window: "1s"}
    scan:   {limit: 100000, window: "1s"}
    sync:   {limit: 100000, window: "1s"}
`

// The daemon kill -9 test repeated at random points: each run sells with
// four tills, kills posedge at a random moment, restarts it, sells on,
// then audits every sale told so far in the journal and at HQ. 8 runs by
// default (well under 2 minutes); POSEDGE_KILL_RUNS=100 for a soak.
func TestDaemonKillLoop(t *testing.T) {
	runs := 8
	if v, err := strconv.Atoi(os.Getenv("POSEDGE_KILL_RUNS")); err == nil && v > 0 {
		runs = v
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	t.Logf("seed %d", seed)
	s := startStore(t, testenv.StoreOptions{Limits: paced})
	s.PutItem("K1", 17, plenty)
	var all []told
	lost, doubled := 0, 0
	start := time.Now()
	for run := 1; run <= runs; run++ {
		t.Run(fmt.Sprintf("run%d", run), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			tl := runTillsKeyed(t, ctx, s, 4, fmt.Sprintf("loop%d", run), "K1", 17)
			after := 200*time.Millisecond + time.Duration(rng.Int64N(int64(1200*time.Millisecond)))
			time.Sleep(after) // a random point in the selling
			s.Edge.Kill()
			s.StartEdge()
			time.Sleep(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
			cancel()
			got := tl.wait()
			all = append(all, got...)
			l, d := audit(t, s, all)
			lost, doubled = lost+l, doubled+d
			t.Logf("killed after %v: %d sales told this run, %d in all; %d lost, %d doubled", after.Round(time.Millisecond), len(got), len(all), l, d)
		})
	}
	t.Logf("%d runs, %d lost, %d doubled (%d sales, %v)", runs, lost, doubled, len(all), time.Since(start).Round(time.Second))
	if lost != 0 || doubled != 0 {
		t.Fatalf("%d lost, %d doubled", lost, doubled)
	}
	checkStockAndCounters(t, s, all, "K1", plenty)
	if rep := reconcileNow(t, s); num(rep["differences"]) != 0 {
		t.Fatalf("reconciliation found differences after the kill loop: %v", rep)
	}
	// Every start-up reconciliation ran while tills sold: none may have
	// "corrected" anything (nothing was lost, so any correction is wrong).
	if n := logCount(t, s, "corrected from the journal"); n != 0 {
		t.Fatalf("%d corrections by start-up reconciliations under load", n)
	}
}

func audit(t *testing.T, s *testenv.Store, told []told) (lost, doubled int) {
	t.Helper()
	want := map[string]bool{}
	for _, g := range told {
		if want[g.flow] {
			doubled++
		}
		want[g.flow] = true
	}
	jr := journalFlows(t, s)
	for f := range want {
		if !jr[f] {
			lost++
			t.Errorf("told %s, not in the journal", f)
		}
	}
	for f := range jr {
		if !want[f] {
			doubled++
			t.Errorf("journal holds %s, which no till was told of", f)
		}
	}
	var hq map[string]int
	deadline := time.Now().Add(60 * time.Second)
	for {
		hq, _ = s.HQRows()
		missing := 0
		for f := range want {
			if hq[f] == 0 {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling HQ's database
	}
	for f := range want {
		if hq[f] == 0 {
			lost++
			t.Errorf("told %s, not at HQ after 60 s", f)
		}
	}
	for f, n := range hq {
		switch {
		case !want[f]:
			doubled += n
			t.Errorf("HQ holds %s, which no till was told of", f)
		case n > 1:
			doubled += n - 1
		}
	}
	return lost, doubled
}

// journalFlows reads every flow number the journal holds.
func journalFlows(t *testing.T, s *testenv.Store) map[string]bool {
	t.Helper()
	db := journalDB(t, s)
	rows, err := db.Query(`SELECT flow_no FROM txns`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			t.Fatal(err)
		}
		out[f] = true
	}
	return out
}

func journalDB(t *testing.T, s *testenv.Store) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Dir, "journal.db")+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// checkStockAndCounters waits until Redis's stock of barcode and the
// day's totals are exactly what the tills were told.
func checkStockAndCounters(t *testing.T, s *testenv.Store, got []told, barcode string, initialStock int64) {
	t.Helper()
	var qty, cents int64
	for _, g := range got {
		qty += g.qty
		cents += g.cents
	}
	testenv.WaitFor(t, 30*time.Second, "stock and counters to match what the terminals were told", func() bool {
		item := s.T(s.Terminals[0], "GET", "/v1/items/"+barcode, nil, nil)
		day := s.Admin("GET", "/admin/v1/stats/daily?date="+time.Now().UTC().Format("20060102"), nil)
		tot, _ := day.JSON()["totals"].(map[string]any)
		return item.Status == 200 && item.JSON()["stale"] == false && num(item.JSON()["stock"]) == initialStock-qty &&
			tot != nil && num(tot["sales"]) == int64(len(got)) && num(tot["sales_cents"]) == cents
	})
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
	var sum float64
	for _, line := range strings.Split(string(r.Body), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
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
