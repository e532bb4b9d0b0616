package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// Serve first, recover behind (docs/durability.md, Start-up): a restarted
// posedge tells its first sale within 2 s of its process starting,
// whatever Redis's state and however large its degraded backlog; once
// Redis answers, everything journaled is applied once: stock and the
// day's counters are what the test's own sales make them, every flow
// number told is told once.

// firstSaleWithin is the bound of issue 21: process start → first 201.
const firstSaleWithin = 2 * time.Second

// raceSlack scales the time bounds when the daemons are race builds
// (make test sets POSEDGE_RACE=1): the race detector slows the daemon's
// pure-Go SQLite several times over, and the start-up quick_check of a
// 20,000-row journal alone then takes most of 2 s on the shared CI box.
// The bound is a production binary's: the plain build is held to 2 s
// (go test without POSEDGE_RACE) and make bench measures it.
func raceSlack() time.Duration {
	if os.Getenv("POSEDGE_RACE") == "1" {
		return 3
	}
	return 1
}

const (
	sfBarcode = "4006381333931"
	sfPrice   = 250
	sfStock   = 1_000_000
)

// sfLedger is what a test knows of the sales it made: key → flow number
// told, per terminal.
type sfLedger struct {
	mu    sync.Mutex
	told  map[string]string // terminal/key → flow number
	flows map[string]string // flow number → terminal/key
	dup   []string
}

func newSFLedger() *sfLedger {
	return &sfLedger{told: map[string]string{}, flows: map[string]string{}}
}

func (l *sfLedger) add(term, key, flow string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := term + "/" + key
	if prev, ok := l.flows[flow]; ok && prev != id {
		l.dup = append(l.dup, fmt.Sprintf("flow %s told for %s and %s", flow, prev, id))
	}
	if prev, ok := l.told[id]; ok && prev != flow {
		l.dup = append(l.dup, fmt.Sprintf("key %s told %s and %s", id, prev, flow))
	}
	l.told[id], l.flows[flow] = flow, id
}

func (l *sfLedger) n() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.told)
}

// sell makes one one-unit sale and records it when told 201.
func (l *sfLedger) sell(s *testenv.Store, term, key string) testenv.Resp {
	r := s.Sale(term, key, sfBarcode, 1, sfPrice)
	if r.Status == 201 {
		l.add(term, key, r.Flow())
	}
	return r
}

// restartServesFirst kills posedge, breaks Redis (fault), optionally
// fills the journal with a degraded backlog while posedge is down, starts
// posedge again and asserts the first 201 comes within firstSaleWithin;
// it sells on through the recovery, heals Redis, and checks every sale
// was applied once.
func restartServesFirst(t *testing.T, fault, heal func(s *testenv.Store), backlog int) {
	s := startStore(t, testenv.StoreOptions{NoHQ: true, Limits: looseMix})
	s.PutItem(sfBarcode, sfPrice, sfStock)
	sold := newSFLedger()
	for i := range 5 {
		if r := sold.sell(s, s.Terminals[0], fmt.Sprintf("pre-%d", i)); r.Status != 201 {
			t.Fatalf("sale before the restart: %d %s", r.Status, r.Body)
		}
	}
	s.Edge.Kill()
	fault(s)
	var backlogKeys []string
	if backlog > 0 {
		backlogKeys = degradedBacklog(t, s, sold, backlog)
	}

	start := time.Now()
	s.Edge.Start(t)
	first := time.Duration(0)
	for time.Since(start) < 10*time.Second {
		// One key, retried as a till retries: a try the daemon took but
		// never answered in time is the same sale, not an unaccounted one.
		r := sold.sell(s, s.Terminals[1], "first")
		if r.Status == 201 {
			first = time.Since(start)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("first 201 %v after posedge started (backlog %d)", first.Round(time.Millisecond), backlog)
	if first == 0 || first > firstSaleWithin*raceSlack() {
		t.Errorf("first 201 after %v (0: none within 10 s), want within %v", first.Round(time.Millisecond), firstSaleWithin*raceSlack())
	}

	// Tills sell on while recovery runs behind; a till retrying a backlog
	// sale's key is answered that sale, never a second one.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for ti, term := range s.Terminals[1:] {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("during-%d-%d", ti, i)
				for {
					r := sold.sell(s, term, key)
					if r.Status == 201 {
						break
					}
					if r.Status != 0 && r.Status != 503 {
						t.Errorf("sale during recovery: %d %s", r.Status, r.Body)
						return
					}
					time.Sleep(10 * time.Millisecond) // the same key again, as a till retries
				}
				// ~10 sales/s a till, far above a real one's: recovery applies
				// the backlog faster than tills add to it, or it never ends.
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	wg.Go(func() {
		for i, key := range backlogKeys {
			if ctx.Err() != nil || i >= 200 {
				return
			}
			r := s.Sale(s.Terminals[0], key, sfBarcode, 1, sfPrice)
			if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("retry of backlog key %s during recovery: %d %v %s, want the replay of it", key, r.Status, r.Header, r.Body)
				return
			}
			sold.add(s.Terminals[0], key, r.Flow())
		}
	})
	time.Sleep(time.Second)
	heal(s)
	testenv.WaitFor(t, 40*time.Second*raceSlack(), "posedge ready (recovery done, normal mode)", func() bool {
		return s.Admin("GET", "/readyz", nil).Status == 200
	})
	for _, line := range strings.Split(s.Edge.Tail(1<<20), "\n") {
		if strings.Contains(line, "start-up recovery finished") || strings.Contains(line, "applied degraded transactions") {
			t.Log(line)
		}
	}
	time.Sleep(500 * time.Millisecond) // a few sales in normal mode too
	cancel()
	wg.Wait()
	for i := range 5 {
		if r := sold.sell(s, s.Terminals[0], fmt.Sprintf("post-%d", i)); r.Status != 201 {
			t.Fatalf("sale after recovery: %d %s", r.Status, r.Body)
		}
	}
	checkAppliedOnce(t, s, sold)
}

// checkAppliedOnce: Redis's stock and counters are what the test's own
// sales make them, nothing journaled waits, every flow told was told once
// and is in the journal.
func checkAppliedOnce(t *testing.T, s *testenv.Store, sold *sfLedger) {
	t.Helper()
	sold.mu.Lock()
	defer sold.mu.Unlock()
	for _, d := range sold.dup {
		t.Errorf("told twice: %s", d)
	}
	n := int64(len(sold.told))
	testenv.WaitFor(t, 20*time.Second, "nothing unapplied in the journal", func() bool {
		return s.JournalRows("applied = 0") == 0
	})
	inJournal := journalTxns(t, s.Journal)
	for flow, id := range sold.flows {
		if inJournal[flow] != 1 {
			t.Errorf("flow %s (%s) told, %d times in the journal", flow, id, inJournal[flow])
		}
	}
	if len(inJournal) != len(sold.flows) {
		t.Errorf("journal holds %d transactions, the tills were told %d", len(inJournal), len(sold.flows))
	}
	r := s.T(s.Terminals[0], "GET", "/v1/items/"+sfBarcode, nil, nil)
	if got := num(r.JSON()["stock"]); r.Status != 200 || got != sfStock-n {
		t.Errorf("stock %d (%d %s), want %d - %d sales = %d", got, r.Status, r.Body, sfStock, n, sfStock-n)
	}
	var daily struct {
		Totals counts `json:"totals"`
	}
	day := time.Now().UTC().Format("20060102")
	r = s.Admin("GET", "/admin/v1/stats/daily?date="+day, nil)
	if err := json.Unmarshal(r.Body, &daily); r.Status != 200 || err != nil {
		t.Fatalf("daily stats: %d %s", r.Status, r.Body)
	}
	if want := (counts{Sales: n, SalesCents: n * sfPrice}); daily.Totals != want {
		t.Errorf("daily totals %+v, want %+v", daily.Totals, want)
	}
	t.Logf("%d sales applied once", n)
}

// degradedBacklog journals n degraded sales of terminal 1 while posedge
// is down, as a daemon selling with every Redis node hung leaves them:
// through the ledger in degraded mode, on the daemon's journal, node 0.
// It returns the keys.
func degradedBacklog(t *testing.T, s *testenv.Store, sold *sfLedger, n int) []string {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	j, err := journal.Open(ctx, s.Journal, journal.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never called: degraded
	defer rdb.Close()
	l, err := ledger.New(ctx, ledger.Config{StoreID: s.StoreID, RedisTimeout: 300 * time.Millisecond}, rdb, j,
		slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	l.SetRedisDown(true)
	keys := make([]string, n)
	var wg sync.WaitGroup
	const workers = 64
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				keys[i] = fmt.Sprintf("bk-%d", i)
				res, err := l.Sale(ctx, s.Terminals[0], keys[i], ledger.SaleRequest{TotalCents: sfPrice, Tender: "cash",
					Lines: []ledger.Line{{Barcode: sfBarcode, Qty: 1, PriceCents: sfPrice}}})
				if err != nil {
					t.Errorf("degraded sale %d: %v", i, err)
					return
				}
				sold.add(s.Terminals[0], keys[i], res.FlowNo)
			}
		})
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if got := s.JournalRows("applied = 0"); got != n {
		t.Fatalf("%d degraded transactions wait in the journal, want %d", got, n)
	}
	t.Logf("%d degraded transactions journaled in %v", n, time.Since(start).Round(time.Millisecond))
	return keys
}

func noop(*testenv.Store) {}

// TestServeFirstRedisHung: every Redis node frozen (SIGSTOP) while
// posedge restarts.
func TestServeFirstRedisHung(t *testing.T) {
	restartServesFirst(t, func(s *testenv.Store) { s.Redis.StopAll() }, func(s *testenv.Store) { s.Redis.ContAll() }, 0)
}

// TestServeFirstRedisDown: every Redis node killed while posedge
// restarts, started again later.
func TestServeFirstRedisDown(t *testing.T) {
	restartServesFirst(t, func(s *testenv.Store) {
		for i := range s.Redis.Nodes {
			s.Redis.KillNode(i)
		}
	}, func(s *testenv.Store) {
		for i := range s.Redis.Nodes {
			s.Redis.RestartNode(i)
		}
	}, 0)
}

// TestServeFirstNoQuorum: the master dead and two of three Sentinels
// killed (no quorum: no failover) while posedge restarts; the master is
// started again later, still the master.
func TestServeFirstNoQuorum(t *testing.T) {
	var master int
	restartServesFirst(t, func(s *testenv.Store) {
		master = s.Redis.MasterIndex()
		s.Redis.Sentinels[0].Kill()
		s.Redis.Sentinels[1].Kill()
		s.Redis.KillNode(master)
	}, func(s *testenv.Store) { s.Redis.RestartNode(master) }, 0)
}

// TestServeFirstBacklog: 20,000 degraded transactions wait in the journal
// and Redis answers: posedge serves first and applies them behind. On the
// code before issue 21 start-up recovery applied them all before the
// terminal listener served (17.9 s for 20,176 in the issue).
func TestServeFirstBacklog(t *testing.T) {
	restartServesFirst(t, noop, noop, 20_000)
}

// TestFailoverNoSaleWindow: the Redis master SIGKILLed while four tills
// sell. The tills are told sales again within the Redis timeout (the
// ledger falls to degraded mode at the first failed call), not after
// Sentinel's failover; the longest time no till is told a sale, from the
// kill until the daemon is back on the new master, stays under 3 s; every
// sale is applied once.
func TestFailoverNoSaleWindow(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{NoHQ: true, Limits: looseMix})
	s.PutItem(sfBarcode, sfPrice, sfStock)
	sold := newSFLedger()
	var (
		mu  sync.Mutex
		oks []time.Time // when a 201 came
		// sentAfterKill: the first 201 of a request sent after the kill
		firstAfter time.Time
		killed     time.Time
	)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Two sellers per till, each selling again as soon as it is answered:
	// degraded sales then arrive faster than the repair applies them,
	// which is what held normal mode away for good before the repair's
	// catch-up went in bounded passes (the bench's eight tills).
	for ti, term := range append(slices.Clone(s.Terminals), s.Terminals...) {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				key := fmt.Sprintf("fo-%d-%d", ti, i)
				for ctx.Err() == nil {
					sent := time.Now()
					r := sold.sell(s, term, key)
					if r.Status == 201 {
						mu.Lock()
						oks = append(oks, time.Now())
						if !killed.IsZero() && sent.After(killed) && firstAfter.IsZero() {
							firstAfter = time.Now()
						}
						mu.Unlock()
						break
					}
					if r.Status != 0 && r.Status != 503 {
						t.Errorf("sale: %d %s", r.Status, r.Body)
						return
					}
					time.Sleep(5 * time.Millisecond) // the same key again
				}
			}
		})
	}
	time.Sleep(time.Second)
	master := s.Redis.MasterIndex()
	mu.Lock()
	killed = time.Now()
	mu.Unlock()
	s.Redis.KillNode(master)
	testenv.WaitFor(t, 20*time.Second, "posedge degraded", func() bool {
		return s.Admin("GET", "/readyz", nil).Status != 200
	})
	testenv.WaitFor(t, 40*time.Second, "posedge back in normal mode on the new master", func() bool {
		return s.Admin("GET", "/readyz", nil).Status == 200
	})
	time.Sleep(time.Second)
	cancel()
	wg.Wait()
	ended := time.Now()

	mu.Lock()
	longest, prev := time.Duration(0), killed
	for _, at := range oks { // appended in order of arrival, under mu
		if at.Before(killed) {
			continue
		}
		longest, prev = max(longest, at.Sub(prev)), at
	}
	longest = max(longest, ended.Sub(prev))
	first := firstAfter.Sub(killed)
	mu.Unlock()
	t.Logf("master killed: first 201 of a sale sent after the kill %v later; longest time no till was told a sale %v",
		first.Round(time.Millisecond), longest.Round(time.Millisecond))
	if firstAfter.IsZero() || first > 1500*time.Millisecond {
		t.Errorf("first 201 of a sale sent after the kill came %v after it, want within the Redis timeout (1.5 s with slack)", first)
	}
	if longest > 3*time.Second {
		t.Errorf("no till was told a sale for %v, want under 3 s", longest)
	}
	checkAppliedOnce(t, s, sold)
}
