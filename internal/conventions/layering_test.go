package conventions

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// httpCode as a rule's banned side stands for HTTP code of this module:
// net/http itself, or any package of the module that imports it. Third
// parties are not counted: the Prometheus client and nats.go link
// net/http themselves, and every layer reports metrics; what a rule
// keeps out is our own HTTP handling.
const httpCode = "(HTTP)"

// layerRule: no package at or under from links (go list -deps, so also
// through another package) a package at or under banned.
type layerRule struct {
	from, banned, why string
}

// layering is the one table of which part may link which, in the manner
// of Tailscale's tstest/deptest: checked on transitive dependencies, and
// a rule that no longer matches a package, or that another rule already
// implies, is itself a failure (a stale rule protects nothing).
func layering() []layerRule {
	return []layerRule{
		// The bottom layer: shared by both daemons, it knows neither.
		{"internal/", "edge/", "internal/ is the bottom layer; nothing in it links the store daemon"},
		{"internal/", "sync/", "internal/ is the bottom layer; nothing in it links the HQ sync"},
		{"internal/", "offline/", "internal/ is the bottom layer; nothing in it links the journal"},
		{"internal/", "cmd/", "internal/ is the bottom layer; nothing in it links a binary"},
		// The store side and HQ never link each other.
		{"edge/", "sync/hq", "the edge daemon must not link the HQ receiver"},
		{"offline/", "sync/hq", "the journal must not link the HQ receiver"},
		{"sync/hq", "edge/", "posedge-hq must not link the edge daemon"},
		{"sync/hq", "offline/", "posedge-hq must not link the store's journal"},
		{"edge/", "sync/hqdb", "the edge daemon must not link HQ's databases"},
		{"offline/", "sync/hqdb", "the journal must not link HQ's databases"},
		// HQ's databases sit below the receiver: the Store interface and
		// its backends know nothing of JetStream, HTTP or the config, and
		// no backend links another (one package per backend).
		{"sync/hqdb", "sync/hq", "HQ's databases are below the receiver and its admin API"},
		{"sync/hqdb", "edge/", "HQ's databases know nothing of the store"},
		{"sync/hqdb", "offline/", "HQ's databases know nothing of the journal"},
		{"sync/hqdb", httpCode, "HQ's databases know no HTTP"},
		{"sync/hqdb/sqlite", "sync/hqdb/postgres", "one backend never links another"},
		{"sync/hqdb/postgres", "sync/hqdb/sqlite", "one backend never links another"},
		// Data flows one way: api → ratelimit, ledger → redisdb → lua,
		// journal → replay → hq.
		{"offline/", "edge/", "the journal knows nothing of the daemon, HTTP or Redis"},
		{"edge/ledger", "edge/api", "the ledger is below the API"},
		{"edge/ratelimit", "edge/api", "the limiter is below the API"},
		{"edge/ratelimit", "edge/ledger", "the limiter decides without the money path"},
		{"sync/replay", "edge/", "the replayer reads the journal, never the edge daemon"},
		{"edge/redisdb", "edge/ledger", "the store's Redis layout knows no money logic: the ledger calls it"},
		{"edge/redisdb", "edge/ratelimit", "the store's Redis layout knows no limiter policy: the limiter calls it"},
		{"edge/redisdb", "edge/lock", "the store's Redis layout is below the lock that runs its scripts"},
		{"lua", "edge/", "scripts know no caller"},
		// Health facts are below their judging, and neither links the
		// daemon: `posedge status` judges a journal while the daemon is
		// down (issue 25: it linked the whole daemon for two helpers).
		{"edge/health", "edge/status", "facts are gathered without their judging"},
		{"edge/health", "edge/daemon", "subsystems report facts; the daemon only wires them"},
		{"edge/status", "edge/daemon", "status judges facts, it does not gather them"},
		// The money core and its feeders know no HTTP: request decoding
		// and the refusal → status mapping live in edge/api, so each can
		// be tested and reused without a server.
		{"edge/ledger", httpCode, "the money core knows no HTTP"},
		{"edge/ratelimit", httpCode, "the limiter returns a decision and writes no headers"},
		{"offline/", httpCode, "the journal knows no HTTP"},
		{"sync/replay", httpCode, "the replayer speaks NATS, not HTTP"},
		{"edge/redisdb", httpCode, "the store's Redis knows no HTTP"},
		{"lua", httpCode, "scripts know no HTTP"},
		{"edge/health", httpCode, "facts are read by /readyz and status, they serve no HTTP"},
		{"internal/cents", httpCode, "money arithmetic knows no HTTP"},
		// The test harness stays out of shipped code.
		{"", "internal/testenv", "the test harness is for tests only"},
	}
}

// layeringExceptions are links a rule forbids that the tree still has,
// each with the reason it is tolerated; one no longer needed fails the
// test, so it cannot outlive its reason.
func layeringExceptions() map[[2]string]string {
	return map[[2]string]string{}
}

// under reports whether path is prefix or below it; prefix "" is every
// package, a prefix ending in "/" is only what lies below it.
func under(path, prefix string) bool {
	if prefix == "" {
		return true
	}
	p := strings.TrimSuffix(prefix, "/")
	return path == p || strings.HasPrefix(path, p+"/")
}

func TestLayering(t *testing.T) {
	const mod = "github.com/posedge/posedge/"
	checkLayering(t, listPackages(t), mod, layering(), layeringExceptions())
}

// checkLayering is TestLayering's body, apart so that a planted
// violation can be shown to fail it.
func checkLayering(t testing.TB, ps []pkg, mod string, rules []layerRule, except map[[2]string]string) {
	t.Helper()
	rel := func(path string) (string, bool) { return strings.CutPrefix(path, mod) }
	// The module's own HTTP code: packages importing net/http directly.
	http := map[string]bool{}
	for _, p := range ps {
		if slices.ContainsFunc(p.Imports, isHTTP) {
			r, _ := rel(p.ImportPath)
			http[r] = true
		}
	}
	fromUsed := make([]bool, len(rules))
	bannedUsed := make([]bool, len(rules))
	exceptUsed := map[[2]string]bool{}
	for _, p := range ps {
		from, _ := rel(p.ImportPath)
		// What p links, module-relative; "net/http" when p or a
		// module package it links imports it.
		var links []string
		if http[from] {
			links = append(links, httpCode)
		}
		for _, d := range p.Deps {
			if r, ok := rel(d); ok {
				links = append(links, r)
				if http[r] {
					links = append(links, httpCode)
				}
			}
		}
		for i, r := range rules {
			if !under(from, r.from) || (r.banned != httpCode && under(from, r.banned)) {
				continue // a package may link its own subtree
			}
			fromUsed[i] = true
			for _, l := range links {
				if !matches(l, r.banned) {
					continue
				}
				if _, ok := except[[2]string{from, l}]; ok {
					exceptUsed[[2]string{from, l}] = true
					continue
				}
				if l == httpCode {
					t.Errorf("%s links HTTP code (%s): %s", from, httpVia(from, p.Deps, http, mod), r.why)
					break
				}
				t.Errorf("%s links %s (go list -deps): %s", from, l, r.why)
			}
		}
	}
	for _, p := range ps {
		r, _ := rel(p.ImportPath)
		for i, rule := range rules {
			if rule.banned == httpCode || under(r, rule.banned) {
				bannedUsed[i] = true
			}
		}
	}
	for i, r := range rules {
		if !fromUsed[i] || !bannedUsed[i] {
			t.Errorf("stale layering rule %q → %q: it matches no package (renamed or moved?)", r.from, r.banned)
		}
		for j, o := range rules {
			if i != j && implies(o, r) && (r != o || i > j) {
				t.Errorf("layering rule %q → %q is implied by %q → %q: keep one", r.from, r.banned, o.from, o.banned)
				break
			}
		}
	}
	for k, why := range except {
		if !exceptUsed[k] {
			t.Errorf("stale layering exception %s → %s (%s): the link is gone, drop the exception", k[0], k[1], why)
		}
	}
}

// matches reports whether a linked package l (module-relative, or
// httpCode) is what banned names.
func matches(l, banned string) bool {
	if banned == httpCode || l == httpCode {
		return l == banned
	}
	return under(l, banned)
}

// implies reports whether rule o forbids all that rule r forbids.
func implies(o, r layerRule) bool {
	return under(strings.TrimSuffix(r.from, "/"), o.from) && matches(strings.TrimSuffix(r.banned, "/"), o.banned)
}

func isHTTP(imp string) bool { return imp == "net/http" || strings.HasPrefix(imp, "net/http/") }

// httpVia names the first module package through which from links HTTP.
func httpVia(from string, deps []string, http map[string]bool, mod string) string {
	if http[from] {
		return "imports net/http"
	}
	for _, d := range deps {
		if r, ok := strings.CutPrefix(d, mod); ok && http[r] {
			return "through " + r
		}
	}
	return "?"
}

// recorder is a testing.TB that keeps what checkLayering reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// Each kind of violation TestLayering must catch, planted in a small
// made-up tree: the check must fail on it (and pass on the tree without
// it), so no rule silently checks nothing.
func TestLayeringFailsOnPlantedViolations(t *testing.T) {
	const mod = "m/"
	base := func() []pkg {
		return []pkg{
			{ImportPath: "m/internal/cents"},
			{ImportPath: "m/internal/httpguard", Imports: []string{"net/http"}},
			{ImportPath: "m/internal/testenv"},
			{ImportPath: "m/edge/ledger", Deps: []string{"m/internal/cents"}},
			{ImportPath: "m/edge/api", Imports: []string{"net/http"}, Deps: []string{"m/edge/ledger", "m/internal/httpguard"}},
			{ImportPath: "m/sync/hq", Deps: []string{"m/internal/cents"}},
		}
	}
	rules := []layerRule{
		{"internal/", "edge/", "bottom layer"},
		{"edge/", "sync/hq", "store never links HQ"},
		{"edge/ledger", "edge/api", "ledger below the API"},
		{"edge/ledger", httpCode, "no HTTP"},
		{"", "internal/testenv", "harness for tests only"},
	}
	run := func(ps []pkg, rules []layerRule, except map[[2]string]string) []string {
		r := &recorder{TB: t}
		checkLayering(r, ps, mod, rules, except)
		return r.errs
	}
	if errs := run(base(), rules, nil); len(errs) != 0 {
		t.Fatalf("the clean tree fails: %q", errs)
	}
	with := func(path string, deps ...string) []pkg {
		ps := base()
		for i := range ps {
			if ps[i].ImportPath == path {
				ps[i].Deps = append(ps[i].Deps, deps...)
			}
		}
		return ps
	}
	tests := []struct {
		name   string
		ps     []pkg
		rules  []layerRule
		except map[[2]string]string
		want   string
	}{
		{"internal/ links edge/", with("m/internal/cents", "m/edge/ledger"), rules, nil, "internal/cents links edge/ledger"},
		{"the store links HQ through a dependency", with("m/edge/ledger", "m/internal/cents", "m/sync/hq"), rules, nil, "edge/ledger links sync/hq"},
		{"an upward link", with("m/edge/ledger", "m/edge/api"), rules, nil, "edge/ledger links edge/api"},
		{"HTTP code reached transitively", with("m/edge/ledger", "m/internal/httpguard"), rules, nil, "edge/ledger links HTTP code (through internal/httpguard)"},
		{"the harness in shipped code", with("m/edge/api", "m/internal/testenv"), rules, nil, "edge/api links internal/testenv"},
		{"a rule whose package is gone", base(), append(slices.Clone(rules), layerRule{"edge/gone", "edge/api", "x"}), nil, `stale layering rule "edge/gone"`},
		{"a rule whose banned package is gone", base(), append(slices.Clone(rules), layerRule{"edge/", "offline/", "x"}), nil, `stale layering rule "edge/" → "offline/"`},
		{"a rule another implies", base(), append(slices.Clone(rules), layerRule{"internal/cents", "edge/ledger", "x"}), nil, `layering rule "internal/cents" → "edge/ledger" is implied`},
		{"an exception no longer needed", base(), rules, map[[2]string]string{{"internal/cents", "edge/ledger"}: "x"}, "stale layering exception internal/cents → edge/ledger"},
	}
	for _, tt := range tests {
		errs := run(tt.ps, tt.rules, tt.except)
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tt.want) }) {
			t.Errorf("%s: checkLayering reported %q, want one containing %q", tt.name, errs, tt.want)
		}
	}
	// An exception covers exactly its link.
	if errs := run(with("m/internal/cents", "m/edge/ledger"), rules, map[[2]string]string{{"internal/cents", "edge/ledger"}: "x"}); len(errs) != 0 {
		t.Errorf("an excepted link still fails: %q", errs)
	}
}
