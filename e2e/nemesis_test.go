package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/moneycheck"
	"github.com/posedge/posedge/internal/testenv"
)

// The store's own nemesis (issue 21): four tills sell and refund the
// realistic mix while faults are injected at random, two at once, drawn
// from every kind a store meets — posedge SIGKILLed and restarted,
// posedge frozen, the Redis master SIGKILLed, the Redis replicas
// SIGKILLed, two of three Sentinels SIGKILLed, every Redis node frozen,
// the WAN cut (connections reset), HQ hung (the link to NATS black-holed,
// TCP up), posedge-hq SIGKILLed or frozen. Then every fault is healed,
// the store drains (bounded), and the money checker (internal/moneycheck)
// decides from the tills' intents and answers alone: nothing lost,
// nothing doubled, counters and stock exact, every 2xx at HQ once with a
// byte-identical body. The longest time no till was told a sale is
// printed per fault kind (the no-sale window, docs/durability.md).
//
// 2 minutes in make test; POSEDGE_NEMESIS_DURATION=30m (make test-long)
// for a soak. The seed is printed; POSEDGE_NEMESIS_SEED replays the
// same choice of faults and sales (not their timing).
// POSEDGE_NEMESIS_DUMP=1 makes the daemon print its goroutines (SIGQUIT,
// then a restart) the first time no till has been told a sale for 3 s
// while the daemon itself is neither killed nor frozen, to find what holds
// the tills.
func TestNemesis(t *testing.T) {
	dur := 2 * time.Minute
	if v := os.Getenv("POSEDGE_NEMESIS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("POSEDGE_NEMESIS_DURATION=%q: %v", v, err)
		}
		dur = d
	}
	seed := nemesisSeed(t)
	s := startStore(t, testenv.StoreOptions{Limits: looseMix, NATSProxy: true})
	putMixItems(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A modest rate a 2-core CI box keeps up with while it also runs
	// three Redis, three Sentinels, NATS and posedge-hq; a till is patient
	// (minutes) so that a long hold is measured, not a failed test.
	mt := runMixWith(t, ctx, s, 4, "nemesis", seed, mixOptions{pause: 40 * time.Millisecond, patience: 3 * time.Minute})

	n := &nemesis{t: t, s: s, mt: mt, faults: nemesisFaults(), rng: rand.New(rand.NewPCG(seed, seed^0x6e656d)), dump: os.Getenv("POSEDGE_NEMESIS_DUMP") == "1"}
	start := time.Now()
	n.run(dur)
	n.healAll()
	healed := time.Now()
	// Sell on healed for a while: a fault's effects outlast its heal.
	time.Sleep(5 * time.Second)
	cancel()
	told := mt.wait()
	t.Logf("nemesis: %v of faults, %s", healed.Sub(start).Round(time.Second), mt.summary())

	ns := moneycheck.NoSaleWindows(mt.hist.Ops(), n.spans, nemesisRecovery)
	t.Logf("no-sale window: longest %v over %d sales told", ns.Longest, ns.Told)
	var line []string
	for _, k := range ns.Kinds() {
		g := ns.ByKind[k]
		line = append(line, fmt.Sprintf("%s %v (×%d)", k, g.Len().Round(10*time.Millisecond), n.count[k]))
		t.Logf("no-sale window %-18s %8v ×%-3d longest %s", k, g.Len().Round(time.Millisecond), n.count[k], g)
	}
	t.Logf("no-sale window by kind: %s", strings.Join(line, ", "))
	for _, g := range ns.Long {
		if g.Len() > 3*time.Second {
			t.Logf("no-sale gap over 3 s: %s", g)
		}
	}
	// The 3 s bound of issue 21, asserted outside the windows in which
	// posedge itself is SIGKILLed (and restarting) or SIGSTOPped — nothing
	// can answer a till then — with every other fault included
	// (docs/durability.md "No-sale window").
	outside := moneycheck.Gap{}
	for _, g := range ns.Long {
		if g.Len() > outside.Len() && !daemonHeld(g) {
			outside = g
		}
	}
	// Per kind again without the restarts and freezes, which otherwise
	// dominate every kind they overlap.
	byKind := map[string]time.Duration{}
	for _, g := range ns.Long {
		if daemonHeld(g) {
			continue
		}
		for _, k := range g.Kinds {
			byKind[k] = max(byKind[k], g.Len())
		}
	}
	var parts []string
	for _, f := range n.faults {
		if f.kind != "posedge-kill" && f.kind != "posedge-freeze" {
			parts = append(parts, fmt.Sprintf("%s %v", f.kind, byKind[f.kind].Round(10*time.Millisecond)))
		}
	}
	t.Logf("no-sale window by kind outside daemon restarts and freezes (0s: under 1s): %s", strings.Join(parts, ", "))
	if outside.Len() == 0 {
		t.Logf("no-sale window outside a daemon restart or freeze: under 1s (bound 3s: true)")
	} else {
		t.Logf("no-sale window outside a daemon restart or freeze: %s (bound 3s: %v)", outside, outside.Len() <= 3*time.Second)
	}
	if outside.Len() > 3*time.Second {
		t.Errorf("no till was told a sale for %s outside a posedge kill or freeze, want at most 3 s (issue 21)", outside)
	}

	// Drain: everything told reaches HQ and every degraded transaction is
	// applied, within a bound.
	want := flowsOf(told)
	testenv.WaitForState(t, 5*time.Minute, "the store to drain after the nemesis", func() (bool, string) {
		hq, _ := s.HQRows()
		missing := 0
		for _, f := range want {
			if hq[f] == 0 {
				missing++
			}
		}
		unapplied := s.JournalRows("applied = 0")
		mode := s.Admin("GET", "/admin/v1/status", nil).JSON()["mode"]
		return missing == 0 && unapplied == 0 && mode == "normal",
			fmt.Sprintf("%d of %d told not at HQ, %d journaled not applied, mode %v", missing, len(want), unapplied, mode)
	})
	t.Logf("drained %v after the last heal", time.Since(healed).Round(100*time.Millisecond))
	// The faults hit: every kind was injected, Redis faults put sales in
	// degraded mode, and a daemon restart found degraded sales to apply.
	for _, f := range n.faults {
		if n.count[f.kind] == 0 {
			t.Errorf("the nemesis never injected %s", f.kind)
		}
	}
	if d := s.JournalRows("mode = 'degraded'"); d == 0 {
		t.Error("no transaction was journaled in degraded mode: the Redis faults did not hit")
	} else {
		t.Logf("%d transactions journaled in degraded mode", d)
	}
	auditMix(t, s, told)
	if rep := reconcileNow(t, s); num(rep["differences"]) != 0 {
		t.Fatalf("reconciliation found differences after the nemesis: %v", rep)
	}
	t.Logf("nemesis seed %d: %d transactions, 0 lost, 0 doubled; %d faults (%s)", seed, len(told), len(n.spans), n.counts())
}

// daemonHeld tells a gap posedge itself caused: it began under, or ran
// through, posedge SIGKILLed (and its restart) or SIGSTOPped.
func daemonHeld(g moneycheck.Gap) bool {
	for _, k := range []string{"posedge-kill", "posedge-freeze", "posedge-dump"} {
		if slices.Contains(g.Kinds, k) || slices.Contains(g.During, k) {
			return true
		}
	}
	return false
}

// nemesisRecovery is how long after its heal a fault is still held
// responsible for a gap in the sales (a restart, a failover, a backlog).
const nemesisRecovery = 3 * time.Second

func nemesisSeed(t *testing.T) uint64 {
	t.Helper()
	if v, err := strconv.ParseUint(os.Getenv("POSEDGE_NEMESIS_SEED"), 10, 64); err == nil {
		t.Logf("nemesis seed %d (POSEDGE_NEMESIS_SEED=%d replays it)", v, v)
		return v
	}
	seed := testSeed(t)
	t.Logf("nemesis seed %d (POSEDGE_NEMESIS_SEED=%d replays it)", seed, seed)
	return seed
}

// nemesisFault is one kind of fault: what it holds (two faults on one
// resource never overlap: a frozen process is not also killed), how long
// it lasts, and how it is injected; inject returns its heal, or nil when
// the fault cannot be injected now (no master known).
type nemesisFault struct {
	kind     string
	resource string
	min, max time.Duration
	inject   func(n *nemesis) func()
}

// nemesisFaults are the kinds the nemesis draws from.
func nemesisFaults() []nemesisFault {
	return []nemesisFault{
		{"posedge-kill", "posedge", 0, 2 * time.Second, func(n *nemesis) func() {
			n.s.Edge.Kill()
			return func() {
				// What start-up recovery has to do: the degraded backlog.
				n.logf("posedge restarted with %d journaled transactions not applied to Redis", n.s.JournalRows("applied = 0"))
				n.s.Edge.Start(n.t) // no wait for /readyz: the tills find out
			}
		}},
		{"posedge-freeze", "posedge", 500 * time.Millisecond, 4 * time.Second, func(n *nemesis) func() {
			n.s.Edge.Signal(syscall.SIGSTOP)
			return func() { n.s.Edge.Signal(syscall.SIGCONT) }
		}},
		{"redis-master-kill", "redis", time.Second, 8 * time.Second, func(n *nemesis) func() {
			m := n.s.Redis.MasterIndex()
			if m < 0 {
				return nil
			}
			n.s.Redis.KillNode(m)
			return func() { n.s.Redis.RestartNodeInRole(m) }
		}},
		{"redis-replicas-kill", "redis", time.Second, 8 * time.Second, func(n *nemesis) func() {
			if n.s.Redis.MasterIndex() < 0 {
				return nil
			}
			reps := n.s.Redis.ReplicaIndexes()
			for _, i := range reps {
				n.s.Redis.KillNode(i)
			}
			return func() {
				for _, i := range reps {
					n.s.Redis.RestartNodeInRole(i)
				}
			}
		}},
		{"sentinels-kill", "sentinels", 2 * time.Second, 8 * time.Second, func(n *nemesis) func() {
			dead := n.rng.Perm(len(n.s.Redis.Sentinels))[:2]
			for _, i := range dead {
				n.s.Redis.KillSentinel(i)
			}
			return func() {
				for _, i := range dead {
					n.s.Redis.RestartSentinel(i)
				}
			}
		}},
		{"redis-freeze", "redis", time.Second, 6 * time.Second, func(n *nemesis) func() {
			n.s.Redis.StopAll()
			return n.s.Redis.ContAll
		}},
		{"wan-cut", "wan", 2 * time.Second, 10 * time.Second, func(n *nemesis) func() {
			n.s.NATSProxy.Set(testenv.Reset, 0)
			return func() { n.s.NATSProxy.Set(testenv.Pass, 0) }
		}},
		{"hq-hung", "wan", 2 * time.Second, 10 * time.Second, func(n *nemesis) func() {
			n.s.NATSProxy.Set(testenv.BlackHole, 0)
			return func() { n.s.NATSProxy.Set(testenv.Pass, 0) }
		}},
		{"hq-kill", "hq", time.Second, 8 * time.Second, func(n *nemesis) func() {
			n.s.HQ.Kill()
			return n.s.StartHQ
		}},
		{"hq-freeze", "hq", time.Second, 8 * time.Second, func(n *nemesis) func() {
			n.s.HQ.Signal(syscall.SIGSTOP)
			return func() { n.s.HQ.Signal(syscall.SIGCONT) }
		}},
	}
}

// nemesis injects faults in two slots, each fault held a random time and
// followed by a random rest, so that two overlap most of the time. It
// runs in the test's goroutine: the helpers it calls may fail the test.
type nemesis struct {
	t      *testing.T
	s      *testenv.Store
	mt     *mixTills
	rng    *rand.Rand
	dump   bool
	faults []nemesisFault
	deck   []int // indexes into faults still to deal this round
	spans  []moneycheck.Span
	count  map[string]int
	slots  [2]nemesisSlot
}

type nemesisSlot struct {
	fault *nemesisFault
	span  int // index into spans
	heal  func()
	until time.Time // heal at, or start the next fault at
}

func (n *nemesis) run(d time.Duration) {
	n.count = map[string]int{}
	start := time.Now()
	end := start.Add(d)
	n.slots[0].until = start.Add(2 * time.Second) // let the tills get going
	n.slots[1].until = start.Add(4 * time.Second)
	dumped := false
	for time.Now().Before(end) {
		for i := range n.slots {
			sl := &n.slots[i]
			if time.Now().Before(sl.until) {
				continue
			}
			if sl.fault != nil {
				n.heal(sl)
				sl.until = time.Now().Add(time.Second + time.Duration(n.rng.Int64N(int64(3*time.Second))))
				continue
			}
			n.inject(sl, &n.slots[1-i])
		}
		n.watch(start)
		if n.dump && !dumped {
			dumped = n.dumpIfHeld()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inject starts a fault of a kind whose resource the other slot does not
// hold. Kinds are dealt from a shuffled deck, so every kind comes once
// before any comes again: a run of two minutes injects each.
func (n *nemesis) inject(sl, other *nemesisSlot) {
	if len(n.deck) == 0 {
		n.deck = n.rng.Perm(len(n.faults))
	}
	pick := -1
	for j, i := range n.deck {
		if f := &n.faults[i]; other.fault == nil || other.fault.resource != f.resource {
			pick = j
			break
		}
	}
	if pick < 0 { // the deck's last kinds all clash with the other slot
		n.deck = append(n.deck, n.rng.Perm(len(n.faults))...)
		sl.until = time.Now().Add(100 * time.Millisecond)
		return
	}
	f := &n.faults[n.deck[pick]]
	heal := f.inject(n)
	if heal != nil {
		n.deck = append(n.deck[:pick], n.deck[pick+1:]...)
	}
	if heal == nil {
		sl.until = time.Now().Add(500 * time.Millisecond)
		return
	}
	now := time.Now()
	sl.fault, sl.heal, sl.span = f, heal, len(n.spans)
	sl.until = now.Add(f.min + time.Duration(n.rng.Int64N(int64(f.max-f.min)+1)))
	n.spans = append(n.spans, moneycheck.Span{Kind: f.kind, From: now})
	n.count[f.kind]++
	n.logf("%s (with %s)", f.kind, n.other(sl))
}

func (n *nemesis) heal(sl *nemesisSlot) {
	sl.heal()
	n.spans[sl.span].To = time.Now()
	n.logf("%s healed after %v", sl.fault.kind, n.spans[sl.span].To.Sub(n.spans[sl.span].From).Round(time.Millisecond))
	sl.fault, sl.heal = nil, nil
}

func (n *nemesis) other(sl *nemesisSlot) string {
	for i := range n.slots {
		if o := &n.slots[i]; o != sl && o.fault != nil {
			return o.fault.kind
		}
	}
	return "nothing else"
}

// healAll heals what is still injected and waits until Redis and its
// Sentinels agree again.
func (n *nemesis) healAll() {
	for i := range n.slots {
		if n.slots[i].fault != nil {
			n.heal(&n.slots[i])
		}
	}
	n.s.Redis.WaitSentinelsAgree(60 * time.Second)
}

// watch fails the test when a process no fault holds has died.
func (n *nemesis) watch(start time.Time) {
	holds := func(res string) bool {
		for _, sl := range n.slots {
			if sl.fault != nil && sl.fault.resource == res {
				return true
			}
		}
		return false
	}
	if !holds("posedge") && !n.s.Edge.Running() && time.Since(start) > time.Second {
		n.t.Fatalf("posedge exited with no fault on it:\n%s", n.s.Edge.Tail(4000))
	}
	if !holds("hq") && !n.s.HQ.Running() {
		n.t.Fatalf("posedge-hq exited with no fault on it:\n%s", n.s.HQ.Tail(4000))
	}
	if n.t.Failed() {
		n.t.FailNow()
	}
}

// dumpIfHeld makes posedge print its goroutines (SIGQUIT) when no till
// has been told a sale for 3 s while posedge is neither killed nor
// frozen, then restarts it; true once done. The dump lands in the
// daemon's log, whose path is printed.
func (n *nemesis) dumpIfHeld() bool {
	last := n.mt.lastSale.Load()
	if last == 0 || time.Since(time.Unix(0, last)) < 3*time.Second {
		return false
	}
	var kinds []string
	for _, sl := range n.slots {
		if sl.fault != nil {
			if sl.fault.resource == "posedge" {
				return false
			}
			kinds = append(kinds, sl.fault.kind)
		}
	}
	sort.Strings(kinds)
	n.logf("no sale told for %v during %v: goroutines of posedge dumped to %s",
		time.Since(time.Unix(0, last)).Round(time.Millisecond), kinds, n.s.Edge.Log)
	n.s.Edge.Signal(syscall.SIGQUIT)
	testenv.WaitFor(n.t, 10*time.Second, "posedge to exit on SIGQUIT", func() bool { return !n.s.Edge.Running() })
	n.spans = append(n.spans, moneycheck.Span{Kind: "posedge-dump", From: time.Unix(0, last), To: time.Now()})
	n.s.Edge.Start(n.t)
	return true
}

// logf logs with the wall clock, to line up with the daemon's log.
func (n *nemesis) logf(format string, args ...any) {
	n.t.Helper()
	n.t.Logf("nemesis %s: %s", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func (n *nemesis) counts() string {
	var ks []string
	for k := range n.count {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var out []string
	for _, k := range ks {
		out = append(out, fmt.Sprintf("%s %d", k, n.count[k]))
	}
	return strings.Join(out, ", ")
}
