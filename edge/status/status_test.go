package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/health"
)

var now = time.Date(2026, 11, 30, 14, 5, 0, 0, time.UTC)

func ago(d time.Duration) *time.Time { t := now.Add(-d); return &t }

// healthy is the contract's OK store: master and both replicas answer,
// normal mode, connected to HQ with a draining backlog, disk to spare.
func healthy() Facts {
	return Facts{
		Now: now, DaemonUp: true, Version: "1.4.0", StoreID: "S001", UptimeSeconds: 3*86400 + 4*3600,
		Redis: health.Redis{OK: true, Master: "10.0.0.5:6379", Replicas: 2, WantReplicas: 2,
			UsedMemory: 120 << 20, MaxMemory: 512 << 20, Sentinels: 3, SentinelsAll: 3, ClockSkew: 2 * time.Millisecond},
		HQ: health.HQ{Connected: true, LastSyncAt: ago(2 * time.Second), Backlog: 3, BacklogBytes: 2100,
			OldestUnsynced: ago(time.Second), RatePerSec: 4.5},
		Journal: health.Journal{Path: "/var/lib/posedge/journal.db", SizeBytes: 48 << 20, DiskFree: 20 << 30, Rows: 18234},
		Limiter: health.Limiter{Denied: 12},
		Terminals: map[string]time.Time{"T01": now.Add(-3 * time.Second), "T02": now.Add(-41 * time.Second),
			"T03": now.Add(-2 * time.Hour)},
	}
}

func thresholds() Thresholds {
	return Thresholds{WarnFreeBytes: 1 << 30, CritFreeBytes: 256 << 20, QuotaBytes: 2 << 30, BacklogCritAge: time.Hour,
		RedisTimeout: 300 * time.Millisecond, CatalogStaleAfter: time.Hour, UnconfirmedWarnAfter: 5 * time.Minute}
}

// Every rule of contract §1, one at a time on an otherwise healthy store:
// the level of the report, its exit code, and the check that says why.
func TestEveryContractRule(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Facts)
		level Level
		check string // the check carrying the level
		mode  string
	}{
		{"healthy store", func(*Facts) {}, OK, "", "normal"},
		{"daemon unreachable", func(f *Facts) {
			*f = Facts{Now: now, DaemonError: "connection refused", StoreID: "S001",
				Journal: health.Journal{Path: "/j.db", DiskFree: 20 << 30, Rows: 10}}
		}, Crit, "daemon", "unknown"},
		{"redis master unreachable", func(f *Facts) {
			f.Redis.OK, f.Redis.Error, f.Ledger.Degraded = false, "dial tcp 10.0.0.5:6379: connection refused", true
		}, Crit, "redis", "degraded"},
		{"redis refusing writes (READONLY)", func(f *Facts) {
			f.Redis.OK, f.Redis.Error = false, "the node answering is a slave, not the master"
		}, Crit, "redis", "degraded"},
		{"degraded mode while redis answers again", func(f *Facts) { f.Ledger.Degraded = true }, Crit, "mode", "degraded"},
		{"rows unconfirmed past 10 × confirm_after while posedge-hq answers", func(f *Facts) {
			f.HQ.Unconfirmed, f.HQ.OldestUnconfirmedAck, f.HQ.HQAnsweredAt = 7, ago(6*time.Minute), ago(10*time.Second)
		}, Warn, "hq_confirm", "normal"},
		{"hq unreachable with a backlog", func(f *Facts) {
			f.HQ.Connected, f.HQ.Backlog, f.HQ.OldestUnsynced = false, 120, ago(10*time.Minute)
		}, Warn, "hq", "normal"},
		{"hq unreachable, backlog older than backlog_crit_age", func(f *Facts) {
			f.HQ.Connected, f.HQ.Backlog, f.HQ.OldestUnsynced = false, 5000, ago(61*time.Minute)
		}, Crit, "hq", "normal"},
		{"hq link up, nothing acknowledged for 15 s while a backlog waits", func(f *Facts) {
			f.HQ.Backlog, f.HQ.OldestUnsynced = 40, ago(45*time.Second)
			f.HQ.LastAckAt, f.HQ.AwaitingAckSince = ago(50*time.Second), ago(StallAfter)
		}, Warn, "hq", "normal"},
		{"hq link up, stalled, backlog older than backlog_crit_age", func(f *Facts) {
			f.HQ.Backlog, f.HQ.OldestUnsynced = 900, ago(61*time.Minute)
			f.HQ.LastAckAt, f.HQ.AwaitingAckSince = ago(61*time.Minute), ago(61*time.Minute)
		}, Crit, "hq", "normal"},
		{"redis: every call near its timeout", func(f *Facts) { f.Redis.Latency = 160 * time.Millisecond }, Warn, "redis_latency", "normal"},
		{"fewer replicas than redis.replicas", func(f *Facts) { f.Redis.Replicas = 1 }, Warn, "replicas", "normal"},
		{"free disk under warn_free_bytes", func(f *Facts) { f.Journal.DiskFree = 900 << 20 }, Warn, "disk", "normal"},
		{"free disk under crit_free_bytes", func(f *Facts) { f.Journal.DiskFree = 100 << 20 }, Crit, "disk", "normal"},
		{"redis memory above 85% of maxmemory", func(f *Facts) { f.Redis.UsedMemory = 450 << 20 }, Warn, "redis_memory", "normal"},
		{"journal over its quota", func(f *Facts) { f.Journal.SizeBytes = 3 << 30 }, Warn, "journal_quota", "normal"},
		{"quarantined messages", func(f *Facts) { f.Journal.Quarantined = 2 }, Warn, "quarantine", "normal"},
		{"transactions redis cannot apply", func(f *Facts) { f.Journal.Unappliable = []string{"2000000000000007"} }, Warn, "unappliable", "normal"},
		{"reconciliation differences", func(f *Facts) { f.Reconciliation = 1 }, Warn, "reconciliation", "normal"},
		{"journal unreadable", func(f *Facts) { f.Journal.Error = "database disk image is malformed" }, Crit, "journal", "normal"},
		{"catalog watch down longer than catalog_stale_after", func(f *Facts) {
			f.Catalog = &health.Catalog{Revision: 812, AppliedAt: ago(3 * time.Hour), DownSince: *ago(61 * time.Minute)}
		}, Warn, "catalog", "normal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy()
			tc.edit(&f)
			r := Evaluate(f, thresholds())
			if r.Status != tc.level || r.Mode != tc.mode {
				t.Fatalf("status %s mode %s, want %s %s; checks %+v", r.Status, r.Mode, tc.level, tc.mode, r.Checks)
			}
			want := map[Level]int{OK: 0, Warn: 1, Crit: 2}[tc.level]
			if got := ExitCode(r.Status); got != want {
				t.Fatalf("exit code %d, want %d", got, want)
			}
			for _, c := range r.Checks {
				if c.Status != OK && c.Name != tc.check && !(tc.check == "redis" && c.Name == "mode") {
					t.Errorf("check %s is %s too: %s", c.Name, c.Status, c.Detail)
				}
				if c.Status != OK && c.Hint == "" {
					t.Errorf("check %s is %s without a hint", c.Name, c.Status)
				}
			}
			if tc.check != "" && level(r, tc.check) != tc.level {
				t.Fatalf("check %s is %q, want %s; checks %+v", tc.check, level(r, tc.check), tc.level, r.Checks)
			}
		})
	}
}

// Only the contract's rules may turn a healthy store WARN: every other
// fact, however odd, leaves it OK.
func TestNothingElseTurnsAHealthyStoreWarn(t *testing.T) {
	cases := map[string]func(*Facts){
		"terminal silent for days":           func(f *Facts) { f.Terminals["T09"] = now.Add(-72 * time.Hour) },
		"many terminals":                     func(f *Facts) { f.Terminals = manyTerminals(40) },
		"no terminal seen yet":               func(f *Facts) { f.Terminals = nil },
		"limiter denying a lot":              func(f *Facts) { f.Limiter.Denied = 1_000_000 },
		"fallback limiter flag":              func(f *Facts) { f.Limiter.Fallback = true },
		"one sentinel answers":               func(f *Facts) { f.Redis.Sentinels = 1 },
		"no sentinel configured":             func(f *Facts) { f.Redis.SentinelsAll, f.Redis.Sentinels = 0, 0 },
		"clock skew of minutes":              func(f *Facts) { f.Redis.ClockSkew = 4 * time.Minute },
		"more replicas than wanted":          func(f *Facts) { f.Redis.Replicas = 4 },
		"no maxmemory":                       func(f *Facts) { f.Redis.MaxMemory = 0 },
		"redis memory at 85% exactly":        func(f *Facts) { f.Redis.UsedMemory = f.Redis.MaxMemory * 85 / 100 },
		"large draining backlog, old oldest": func(f *Facts) { f.HQ.Backlog, f.HQ.OldestUnsynced = 90_000, ago(5*time.Hour) },
		"empty backlog":                      func(f *Facts) { f.HQ.Backlog, f.HQ.OldestUnsynced = 0, nil },
		"never synced yet":                   func(f *Facts) { f.HQ.LastSyncAt = nil },
		"hq unreachable, nothing waiting":    func(f *Facts) { f.HQ.Connected, f.HQ.Backlog, f.HQ.OldestUnsynced = false, 0, nil },
		"just started":                       func(f *Facts) { f.UptimeSeconds = 0 },
		"no quota":                           func(f *Facts) { f.Journal.SizeBytes = 50 << 30 },
		"disk exactly at warn":               func(f *Facts) { f.Journal.DiskFree = 1 << 30 },
		"unapplied rows (redis catching up)": func(f *Facts) { f.Journal.Unapplied = 3 },
		"hq last error kept after reconnect": func(f *Facts) { f.HQ.LastError = "nats: timeout" },
		"publish awaiting its ack for 14s":   func(f *Facts) { f.HQ.LastAckAt, f.HQ.AwaitingAckSince = ago(time.Hour), ago(14*time.Second) },
		"acked 2s ago, a batch out for 20s":  func(f *Facts) { f.HQ.LastAckAt, f.HQ.AwaitingAckSince = ago(2*time.Second), ago(20*time.Second) },
		"awaiting an ack, backlog empty": func(f *Facts) {
			f.HQ.Backlog, f.HQ.OldestUnsynced, f.HQ.AwaitingAckSince = 0, nil, ago(time.Minute)
		},
		"nothing acked for an hour, nothing sent (throttled)": func(f *Facts) { f.HQ.LastAckAt, f.HQ.AwaitingAckSince = ago(time.Hour), nil },
		"awaiting acks while disconnected (hq rule applies)":  func(f *Facts) { f.HQ.Connected, f.HQ.Backlog, f.HQ.AwaitingAckSince = false, 0, ago(time.Minute) },
		"rows unconfirmed, younger than the threshold": func(f *Facts) {
			f.HQ.Unconfirmed, f.HQ.OldestUnconfirmedAck, f.HQ.HQAnsweredAt = 500, ago(4*time.Minute), ago(time.Second)
		},
		"rows unconfirmed for hours, posedge-hq not answering": func(f *Facts) {
			f.HQ.Unconfirmed, f.HQ.OldestUnconfirmedAck, f.HQ.HQAnsweredAt = 9000, ago(3*time.Hour), ago(3*time.Hour)
		},
		"rows unconfirmed, posedge-hq never answered": func(f *Facts) {
			f.HQ.Unconfirmed, f.HQ.OldestUnconfirmedAck = 9000, ago(3*time.Hour)
		},
		"redis answering fast":                      func(f *Facts) { f.Redis.Latency = 800 * time.Microsecond },
		"redis latency just under half its timeout": func(f *Facts) { f.Redis.Latency = 149 * time.Millisecond },
		"catalog watching, last change days ago": func(f *Facts) {
			f.Catalog = &health.Catalog{Revision: 9, AppliedAt: ago(72 * time.Hour), Watching: true}
		},
		"catalog never applied, watching":  func(f *Facts) { f.Catalog = &health.Catalog{Watching: true} },
		"catalog watch down 59 minutes":    func(f *Facts) { f.Catalog = &health.Catalog{Revision: 9, DownSince: *ago(59 * time.Minute)} },
		"plaintext links (told, not WARN)": func(f *Facts) { f.Plaintext = []string{"listen 0.0.0.0:8080 is off loopback without tls"} },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			f := healthy()
			edit(&f)
			th := thresholds()
			if name == "no quota" {
				th.QuotaBytes = 0
			}
			r := Evaluate(f, th)
			if r.Status != OK || ExitCode(r.Status) != 0 {
				t.Fatalf("status %s, want ok; checks %+v", r.Status, r.Checks)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	for level, code := range map[Level]int{OK: 0, Warn: 1, Crit: 2, Unknown: 3, "": 3, "bogus": 3} {
		if got := ExitCode(level); got != code {
			t.Errorf("ExitCode(%q) = %d, want %d", level, got, code)
		}
	}
}

// The worst is what the report says: crit beats unknown beats warn.
func TestWorstCheckWins(t *testing.T) {
	f := healthy()
	f.Redis.Replicas = 1          // warn
	f.Journal.DiskFree = 10 << 20 // crit
	if r := Evaluate(f, thresholds()); r.Status != Crit {
		t.Fatalf("status %s, want crit", r.Status)
	}
}

// The JSON keys of contract §1 are all there.
func TestReportHasTheContractFields(t *testing.T) {
	r := Evaluate(healthy(), thresholds())
	if r.Version != "1.4.0" || r.StoreID != "S001" || r.UptimeSeconds == 0 || r.Redis.Master == "" || r.Redis.Replicas != 2 ||
		!r.HQ.Connected || r.HQ.LastSyncAt == nil || r.HQ.Backlog != 3 || r.HQ.OldestUnsyncedAgeSeconds != 1 ||
		r.Journal.Path == "" || r.Journal.DiskFreeBytes == 0 || r.Journal.Rows != 18234 || len(r.Checks) == 0 {
		t.Fatalf("report misses contract fields: %+v", r)
	}
}

func level(r Report, name string) Level {
	for _, c := range r.Checks {
		if c.Name == name {
			return c.Status
		}
	}
	return ""
}

func manyTerminals(n int) map[string]time.Time {
	m := map[string]time.Time{}
	for i := 1; i <= n; i++ {
		m["T"+strings.Repeat("0", 3-len(itoa(i)))+itoa(i)] = now.Add(-time.Duration(i*i) * time.Second)
	}
	return m
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// Replication lag is shown, never judged: the contract does not list it.
func TestReplicationLagIsInformational(t *testing.T) {
	f := healthy()
	f.Redis.MaxLagSeconds = 3
	r := Evaluate(f, Thresholds{WarnFreeBytes: 1, CritFreeBytes: 1, BacklogCritAge: time.Hour})
	if r.Status != OK {
		t.Fatalf("status %s with lag", r.Status)
	}
	for _, c := range r.Checks {
		if c.Name == "replicas" && !strings.Contains(c.Detail, "lag up to 3 s") {
			t.Fatalf("replicas detail %q", c.Detail)
		}
	}
}

// A hung HQ (link up, acks never come) is told apart from a WAN outage:
// hq.stalled in the JSON, how long nothing was acknowledged, and advice
// that names HQ as well as the WAN.
func TestStalledLinkIsReported(t *testing.T) {
	f := healthy()
	f.HQ.LastError = "publish S001-1000000000000042: nats: timeout waiting for ack"
	f.HQ.Backlog, f.HQ.OldestUnsynced = 40, ago(47*time.Second)
	f.HQ.LastAckAt, f.HQ.AwaitingAckSince = ago(48*time.Second), ago(47*time.Second)
	r := Evaluate(f, thresholds())
	if r.Status != Warn || !r.HQ.Stalled || !r.HQ.Connected || r.HQ.LastAckAt == nil {
		t.Fatalf("status %s, hq %+v", r.Status, r.HQ)
	}
	var hq Check
	for _, c := range r.Checks {
		if c.Name == "hq" {
			hq = c
		}
	}
	if !strings.Contains(hq.Detail, "nothing acknowledged for 47s") || !strings.Contains(hq.Detail, "40 transactions waiting") ||
		!strings.Contains(hq.Hint, "check the WAN and HQ") {
		t.Fatalf("hq check %+v", hq)
	}
	f.HQ.AwaitingAckSince = ago(10 * time.Second)
	if r := Evaluate(f, thresholds()); r.Status != OK || r.HQ.Stalled {
		t.Fatalf("a publish out for 10s: status %s, stalled %v", r.Status, r.HQ.Stalled)
	}
}

// Slow Redis: WARN naming the latency seen and the timeout it nears.
func TestSlowRedisShowsTheLatency(t *testing.T) {
	f := healthy()
	f.Redis.Latency = 212 * time.Millisecond
	r := Evaluate(f, thresholds())
	if r.Status != Warn || r.Redis.LatencyMS != 212 {
		t.Fatalf("status %s, redis %+v", r.Status, r.Redis)
	}
	for _, c := range r.Checks {
		if c.Name == "redis_latency" && !strings.Contains(c.Detail, "212ms (redis.timeout 300ms)") {
			t.Fatalf("detail %q", c.Detail)
		}
	}
}

// The report's catalog object (contract §6): revision, applied_at (RFC
// 3339 or null) and watching; absent when the catalog is not known.
func TestCatalogObject(t *testing.T) {
	cases := []struct {
		name    string
		catalog *health.Catalog
		want    string
	}{
		{"not known", nil, ""},
		{"never applied", &health.Catalog{Watching: true}, `{"revision":0,"applied_at":null,"watching":true}`},
		{"applied, watch down", &health.Catalog{Revision: 42, AppliedAt: ago(90 * time.Second), DownSince: now},
			`{"revision":42,"applied_at":"2026-11-30T14:03:30Z","watching":false}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy()
			f.Catalog = tc.catalog
			b, err := json.Marshal(Evaluate(f, thresholds()))
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if got := string(m["catalog"]); got != tc.want {
				t.Errorf("catalog %s, want %s", got, tc.want)
			}
		})
	}
}

// What a technician must act on is named: the replica that is down, and
// a fallback limiter still held after Redis returned is called deliberate
// rather than blamed on an unreachable Redis.
func TestStatusNamesWhatIsWrong(t *testing.T) {
	th := Thresholds{WarnFreeBytes: 1, CritFreeBytes: 1, BacklogCritAge: time.Hour}
	detail := func(r Report, name string) string {
		for _, c := range r.Checks {
			if c.Name == name {
				return c.Detail
			}
		}
		t.Fatalf("no %s check in %+v", name, r.Checks)
		return ""
	}
	cases := []struct {
		name, check, want string
		set               func(*Facts)
	}{
		{"down replica named", "replicas", "down: 10.0.0.7:6379", func(f *Facts) {
			f.Redis.Replicas, f.Redis.DownReplicas = 1, []string{"10.0.0.7:6379"}
		}},
		{"fallback held after Redis returned", "limiter", "held 42s more after Redis returned (deliberate: one full window)", func(f *Facts) {
			f.Limiter.Fallback, f.Limiter.HeldUntil = true, f.Now.Add(41*time.Second+300*time.Millisecond)
		}},
		{"fallback hold of unknown end", "limiter", "held after Redis returned (deliberate", func(f *Facts) {
			f.Limiter.Fallback = true
		}},
		{"fallback hold over, no request since", "limiter", "is over; Redis decides again from the next request", func(f *Facts) {
			f.Limiter.Fallback, f.Limiter.HeldUntil = true, f.Now.Add(-time.Second)
		}},
		{"a fast Redis never shown as 0s", "redis_latency", "answers in 42µs", func(f *Facts) {
			f.Redis.Latency = 42 * time.Microsecond
		}},
		{"fallback while Redis is down", "limiter", "Redis unreachable", func(f *Facts) {
			f.Limiter.Fallback, f.Redis.OK, f.Ledger.Degraded = true, false, true
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := healthy()
			c.set(&f)
			if d := detail(Evaluate(f, th), c.check); !strings.Contains(d, c.want) {
				t.Fatalf("%s detail %q, want it to contain %q", c.check, d, c.want)
			}
		})
	}
}

// The daemon down and its journal from a posedge before the catalog: the
// catalog check says so, never a watch down for long (no WARN).
func TestCatalogNotInitialised(t *testing.T) {
	f := healthy()
	f.DaemonUp, f.DaemonError = false, "connection refused"
	f.Catalog = &health.Catalog{NotInitialised: true}
	r := Evaluate(f, thresholds())
	for _, c := range r.Checks {
		if c.Name == "catalog" {
			if c.Status != OK || !strings.Contains(c.Detail, "not initialised") {
				t.Errorf("catalog check %+v, want ok and not initialised", c)
			}
			if r.Catalog == nil || r.Catalog.Revision != 0 || r.Catalog.AppliedAt != nil || r.Catalog.Watching {
				t.Errorf("catalog object %+v, want revision 0, never applied, not watching", r.Catalog)
			}
			return
		}
	}
	t.Errorf("no catalog check in %+v", r.Checks)
}

// A link left in plaintext off loopback is named in status, informational
// (issue 22 finding 9: status said nothing).
func TestPlaintextLinksAreTold(t *testing.T) {
	f := healthy()
	f.Plaintext = []string{"listen 0.0.0.0:8080 is off loopback without tls", "hq.nats_url nats://hq.example:4222 is plaintext"}
	r := Evaluate(f, thresholds())
	for _, c := range r.Checks {
		if c.Name == "plaintext" {
			if !strings.Contains(c.Detail, "0.0.0.0:8080") || !strings.Contains(c.Detail, "hq.example") || c.Hint == "" {
				t.Fatalf("plaintext check %+v", c)
			}
			return
		}
	}
	t.Fatalf("no plaintext check in %+v", r.Checks)
}

// Each probed fact carries its age, and a Redis fact older than
// StaleAfter is no longer believed: one UNKNOWN, stale line instead of
// the OK it last said, and the mode judged by the ledger alone.
func TestFactAgeAndStaleness(t *testing.T) {
	th := thresholds()
	th.StaleAfter = StaleAfter
	cases := []struct {
		name      string
		seen      time.Duration // Redis last probed this long ago
		redisOK   bool
		degraded  bool
		wantLevel Level
		wantMode  string
		wantAge   int64
		wantStale bool
	}{
		{"fresh healthy fact", 2 * time.Second, true, false, OK, "normal", 2, false},
		{"at the threshold, still believed", StaleAfter, true, false, OK, "normal", int64(StaleAfter / time.Second), false},
		{"stale OK is not OK", StaleAfter + time.Second, true, false, Unknown, "normal", int64(StaleAfter/time.Second) + 1, true},
		{"stale failure is not taken for degraded", time.Minute, false, false, Unknown, "normal", 60, true},
		{"stale, ledger degraded: crit all the same", time.Minute, true, true, Crit, "degraded", 60, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy()
			f.Redis.SeenAt, f.Redis.OK, f.Ledger.Degraded = now.Add(-tc.seen), tc.redisOK, tc.degraded
			if !tc.redisOK {
				f.Redis.Error = "connection refused"
			}
			r := Evaluate(f, th)
			if r.Status != tc.wantLevel || r.Mode != tc.wantMode {
				t.Fatalf("status %s mode %s, want %s %s; checks %+v", r.Status, r.Mode, tc.wantLevel, tc.wantMode, r.Checks)
			}
			var redis *Check
			for i, c := range r.Checks {
				switch c.Name {
				case "redis":
					redis = &r.Checks[i]
				case "replicas", "redis_latency", "sentinels", "clock", "redis_memory":
					if tc.wantStale {
						t.Errorf("stale Redis fact still judged by %s: %+v", c.Name, c)
					} else if c.AgeSeconds == nil || *c.AgeSeconds != tc.wantAge {
						t.Errorf("%s carries age %v, want %d", c.Name, c.AgeSeconds, tc.wantAge)
					}
				}
			}
			if redis == nil || redis.Stale != tc.wantStale || redis.AgeSeconds == nil || *redis.AgeSeconds != tc.wantAge {
				t.Fatalf("redis check %+v, want stale %v age %d", redis, tc.wantStale, tc.wantAge)
			}
			if tc.wantStale && (redis.Status != Unknown || !strings.Contains(redis.Detail, "stale") || redis.Hint == "") {
				t.Fatalf("stale redis check %+v", redis)
			}
			if r.Redis.SeenAt == nil || *r.Redis.SeenAt != now.Add(-tc.seen).UTC().Format(time.RFC3339) {
				t.Fatalf("redis.seen_at %v", r.Redis.SeenAt)
			}
		})
	}
}

// A fact read for the report (journal, HQ link) has no age; a fact never
// seen has none either: the JSON says nothing rather than a false 0.
func TestNoAgeWithoutASeenFact(t *testing.T) {
	r := Evaluate(healthy(), thresholds())
	for _, c := range r.Checks {
		if c.AgeSeconds != nil || c.Stale {
			t.Errorf("check %s has age %d / stale %v without a seen fact", c.Name, *c.AgeSeconds, c.Stale)
		}
	}
	if r.Redis.SeenAt != nil {
		t.Errorf("redis.seen_at %v", *r.Redis.SeenAt)
	}
}
