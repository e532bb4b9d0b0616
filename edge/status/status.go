package status

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Levels of a check and of the whole report, in rising order of concern
// (unknown is reported apart: it means "could not tell").
const (
	OK      = "ok"
	Warn    = "warn"
	Crit    = "crit"
	Unknown = "unknown"
)

// ExitCode is the Nagios plugin exit code of a level.
func ExitCode(level string) int {
	switch level {
	case OK:
		return 0
	case Warn:
		return 1
	case Crit:
		return 2
	}
	return 3
}

func rank(level string) int {
	switch level {
	case OK:
		return 0
	case Warn:
		return 1
	case Unknown:
		return 2
	case Crit:
		return 3
	}
	return 2
}

// Facts are what the daemon (or, when it is down, the status command)
// observed; Evaluate judges them.
type Facts struct {
	Now            time.Time
	DaemonUp       bool
	DaemonError    string
	Version        string
	StoreID        string
	UptimeSeconds  int64
	Degraded       bool
	Redis          RedisFacts
	HQ             HQFacts
	Journal        JournalFacts
	FallbackActive bool
	// FallbackHeldUntil is when the fallback's deliberate hold after Redis
	// returned ends; zero while Redis does not answer or no hold.
	FallbackHeldUntil time.Time
	LimiterDenied     int64 // requests denied since start
	Terminals         map[string]time.Time
	Reconciliation    int64         // differences found by the last reconciliation
	Catalog           *CatalogFacts // nil: not known (then not reported)
	// Plaintext names links the config leaves in plaintext off loopback
	// (config.PlaintextWarnings).
	Plaintext []string
}

// CatalogFacts describe the watch of HQ's item master.
type CatalogFacts struct {
	Revision  uint64     // bucket revision applied through
	AppliedAt *time.Time // when the last change was applied; nil: never
	Watching  bool
	DownSince time.Time // when the watch stopped, while !Watching; zero: unknown
	// NotInitialised: the journal, read while the daemon is down, was
	// written by a posedge before the catalog (its next start adds it).
	NotInitialised bool
}

// RedisFacts describe the Sentinel topology.
type RedisFacts struct {
	OK           bool
	Master       string
	Replicas     int // online replicas of the master
	WantReplicas int
	Error        string
	UsedMemory   int64
	MaxMemory    int64
	Sentinels    int // sentinels that answered
	SentinelsAll int
	ClockSkew    time.Duration
	// MaxLagSeconds is the largest replication lag the master reports
	// (seconds since a replica's last ack); 0 when none or unknown.
	MaxLagSeconds int64
	// DownReplicas names the replicas the Sentinels see down (host:port).
	DownReplicas []string
	// Latency is the fastest of the last probe's calls; 0 when unknown.
	Latency time.Duration
}

// HQFacts describe the link to headquarters.
type HQFacts struct {
	Connected      bool
	LastSyncAt     *time.Time
	Backlog        int64
	BacklogBytes   int64
	OldestUnsynced *time.Time
	LastError      string
	RatePerSec     float64
	// LastAckAt is when HQ last acknowledged a publish (or the outbox was
	// found empty); AwaitingAckSince is when the oldest publish still
	// awaiting an ack went out, nil when none does.
	LastAckAt        *time.Time
	AwaitingAckSince *time.Time
	// Unconfirmed counts rows JetStream acknowledged that posedge-hq has
	// not confirmed storing; OldestUnconfirmedAck is the earliest ack
	// among them; HQAnsweredAt the last time posedge-hq answered the
	// store's have query (nil: never, or the daemon is down).
	Unconfirmed          int64
	OldestUnconfirmedAck *time.Time
	HQAnsweredAt         *time.Time
}

// JournalFacts describe the journal file and its disk.
type JournalFacts struct {
	Path        string
	SizeBytes   int64
	DiskFree    int64 // -1: could not be read
	Rows        int64
	Quarantined int64
	Unapplied   int64
	Unappliable []string // flow numbers Redis refused to apply, set aside
	MaxFlowNo   string
	Error       string
	Damaged     bool // failed its integrity check: the daemon refuses to serve on it
}

// Thresholds come from the config.
type Thresholds struct {
	WarnFreeBytes  int64
	CritFreeBytes  int64
	QuotaBytes     int64
	BacklogCritAge time.Duration
	// RedisTimeout is redis.timeout: a Redis whose every call takes half
	// of it is close to failing sales over to degraded mode.
	RedisTimeout time.Duration
	// CatalogStaleAfter is hq.catalog_stale_after: the catalog watch down
	// longer than this is WARN.
	CatalogStaleAfter time.Duration
	// UnconfirmedWarnAfter is UnconfirmedWarnFactor × hq.confirm_after: a
	// row JetStream acknowledged that long ago and still not confirmed
	// by a posedge-hq that answers is WARN. 0 = never.
	UnconfirmedWarnAfter time.Duration
}

// UnconfirmedWarnFactor times hq.confirm_after is how long a row may
// stay unconfirmed while posedge-hq answers before status warns: ten
// rounds of asking and resending (5 minutes at the default 30 s), past
// the 3 minutes the contract allows and JetStream's duplicate window.
const UnconfirmedWarnFactor = 10

// StallAfter is how long a link to HQ that is up may go without any
// publish acknowledged while a backlog waits before it counts as
// unreachable (contract §1: hq.stalled).
const StallAfter = 15 * time.Second

// Report is the object `posedge status --json` prints (contract §1).
type Report struct {
	Status        string            `json:"status"`
	Version       string            `json:"version"`
	StoreID       string            `json:"store_id"`
	UptimeSeconds int64             `json:"uptime_seconds"`
	Mode          string            `json:"mode"`
	Redis         RedisReport       `json:"redis"`
	HQ            HQReport          `json:"hq"`
	Journal       JournalReport     `json:"journal"`
	Checks        []Check           `json:"checks"`
	Terminals     map[string]string `json:"terminals,omitempty"` // id → last seen, RFC3339
	Catalog       *CatalogReport    `json:"catalog,omitempty"`
	GeneratedAt   string            `json:"generated_at"`
}

// CatalogReport is the report's catalog object (contract §6).
type CatalogReport struct {
	Revision  uint64  `json:"revision"`
	AppliedAt *string `json:"applied_at"`
	Watching  bool    `json:"watching"`
}

// RedisReport is the report's redis object.
type RedisReport struct {
	OK         bool   `json:"ok"`
	Master     string `json:"master"`
	Replicas   int    `json:"replicas"`
	Error      string `json:"error"`
	Sentinels  int    `json:"sentinels"`
	UsedMemory int64  `json:"used_memory_bytes"`
	MaxMemory  int64  `json:"maxmemory_bytes"`
	// LatencyMS is the fastest call of the last probe, in milliseconds.
	LatencyMS float64 `json:"latency_ms,omitempty"`
}

// HQReport is the report's hq object.
type HQReport struct {
	Connected                bool    `json:"connected"`
	LastSyncAt               *string `json:"last_sync_at"`
	Backlog                  int64   `json:"backlog"`
	BacklogBytes             int64   `json:"backlog_bytes"`
	OldestUnsyncedAgeSeconds int64   `json:"oldest_unsynced_age_seconds"`
	RatePerSec               float64 `json:"replay_rate_per_second"`
	LastError                string  `json:"last_error,omitempty"`
	// Stalled: the link is up but no publish was acknowledged for
	// StallAfter while a backlog waits; counted as unreachable.
	Stalled   bool    `json:"stalled"`
	LastAckAt *string `json:"last_ack_at,omitempty"`
	// Unconfirmed: transactions JetStream acknowledged that posedge-hq
	// has not confirmed storing yet (contract §5).
	Unconfirmed int64 `json:"unconfirmed"`
}

// JournalReport is the report's journal object.
type JournalReport struct {
	Path          string `json:"path"`
	SizeBytes     int64  `json:"size_bytes"`
	DiskFreeBytes int64  `json:"disk_free_bytes"`
	Rows          int64  `json:"rows"`
	Quarantined   int64  `json:"quarantined"`
	Unapplied     int64  `json:"unapplied"`
}

// Check is one line of the report.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Hint   string `json:"hint,omitempty"`
}

// Evaluate judges the facts by the contract's rules. Only those rules turn
// a store WARN or CRIT; every other check is informational.
func Evaluate(f Facts, th Thresholds) Report {
	r := Report{Version: f.Version, StoreID: f.StoreID, UptimeSeconds: f.UptimeSeconds, Mode: "normal",
		GeneratedAt: f.Now.UTC().Format(time.RFC3339)}
	switch {
	case !f.DaemonUp:
		// Only the daemon knows its mode; the offline report must not
		// claim "normal" for a store that is not answering at all.
		r.Mode = "unknown"
	case f.Degraded || !f.Redis.OK:
		r.Mode = "degraded"
	}
	add := func(name, level, detail, hint string) {
		r.Checks = append(r.Checks, Check{Name: name, Status: level, Detail: detail, Hint: hint})
	}
	// Informational (the contract's rules alone turn a store WARN), shown
	// whether or not the daemon answers.
	if len(f.Plaintext) > 0 {
		add("plaintext", OK, "warning: "+strings.Join(f.Plaintext, "; "),
			"configure TLS for these links, or keep them on a network no one else reaches (docs/security.md)")
	}
	if !f.DaemonUp {
		add("daemon", Crit, "posedge daemon not answering: "+f.DaemonError,
			"is the posedge service running? (systemctl status posedge / posedge status-service); check its log")
	} else {
		add("daemon", OK, fmt.Sprintf("posedge %s up %s", f.Version, human(time.Duration(f.UptimeSeconds)*time.Second)), "")
	}
	r.Redis = RedisReport{OK: f.Redis.OK, Master: f.Redis.Master, Replicas: f.Redis.Replicas, Error: f.Redis.Error,
		Sentinels: f.Redis.Sentinels, UsedMemory: f.Redis.UsedMemory, MaxMemory: f.Redis.MaxMemory,
		LatencyMS: float64(f.Redis.Latency.Microseconds()) / 1000}
	stalledFor := stall(f)
	r.HQ = HQReport{Connected: f.HQ.Connected, Backlog: f.HQ.Backlog, BacklogBytes: f.HQ.BacklogBytes,
		RatePerSec: f.HQ.RatePerSec, LastError: f.HQ.LastError, Stalled: stalledFor > 0, Unconfirmed: f.HQ.Unconfirmed}
	if f.HQ.LastSyncAt != nil {
		s := f.HQ.LastSyncAt.UTC().Format(time.RFC3339)
		r.HQ.LastSyncAt = &s
	}
	if f.HQ.LastAckAt != nil {
		s := f.HQ.LastAckAt.UTC().Format(time.RFC3339)
		r.HQ.LastAckAt = &s
	}
	var oldestAge time.Duration
	if f.HQ.OldestUnsynced != nil {
		oldestAge = f.Now.Sub(*f.HQ.OldestUnsynced)
		if oldestAge < 0 {
			oldestAge = 0
		}
		r.HQ.OldestUnsyncedAgeSeconds = int64(oldestAge / time.Second)
	}
	r.Journal = JournalReport{Path: f.Journal.Path, SizeBytes: f.Journal.SizeBytes, DiskFreeBytes: f.Journal.DiskFree,
		Rows: f.Journal.Rows, Quarantined: f.Journal.Quarantined, Unapplied: f.Journal.Unapplied}

	if f.DaemonUp {
		switch {
		case !f.Redis.OK:
			add("redis", Crit, "Redis master unreachable or refusing writes: "+f.Redis.Error,
				"sales go on in degraded mode; check redis-server and redis-sentinel"+masterHint(f.Redis.Master))
		default:
			add("redis", OK, "master "+f.Redis.Master+" answers and takes writes", "")
		}
		if f.Redis.OK && f.Redis.Replicas < f.Redis.WantReplicas {
			detail := fmt.Sprintf("%d of %d replicas online", f.Redis.Replicas, f.Redis.WantReplicas)
			if len(f.Redis.DownReplicas) > 0 {
				detail += "; down: " + strings.Join(f.Redis.DownReplicas, ", ")
			}
			add("replicas", Warn, detail,
				"a replica is down or resyncing: check the redis-server service of the replica named")
		} else if f.Redis.OK {
			add("replicas", OK, fmt.Sprintf("%d of %d replicas online%s", f.Redis.Replicas, f.Redis.WantReplicas, lagDetail(f.Redis.MaxLagSeconds)), "")
		}
		if f.Redis.OK && f.Redis.Latency > 0 {
			// Rounded for reading, never to 0s: a loopback Redis answers
			// in tens of microseconds.
			lat := f.Redis.Latency.Round(time.Millisecond / 10)
			if lat < time.Millisecond {
				lat = max(f.Redis.Latency.Round(time.Microsecond), time.Microsecond)
			}
			if th.RedisTimeout > 0 && f.Redis.Latency >= th.RedisTimeout/2 {
				add("redis_latency", Warn, fmt.Sprintf("Redis answers slowly: even its fastest call took %v (redis.timeout %v)", lat, th.RedisTimeout),
					"calls that reach redis.timeout fail and sales go on in degraded mode; check the Redis host's load, disk and network")
			} else {
				add("redis_latency", OK, fmt.Sprintf("Redis answers in %v", lat), "")
			}
		}
		if f.Redis.SentinelsAll > 0 {
			// Informational: the contract lets no Sentinel rule turn a store
			// WARN, but a technician should see a lost quorum coming.
			detail := fmt.Sprintf("%d of %d sentinels answer", f.Redis.Sentinels, f.Redis.SentinelsAll)
			if quorum := f.Redis.SentinelsAll/2 + 1; f.Redis.Sentinels < quorum {
				detail += fmt.Sprintf("; a failover needs %d (check redis-sentinel)", quorum)
			}
			add("sentinels", OK, detail, "")
		}
		if f.Redis.OK && f.Redis.ClockSkew != 0 {
			skew := f.Redis.ClockSkew.Round(time.Millisecond)
			detail := "host and Redis clocks agree"
			if skew > time.Second || skew < -time.Second {
				detail = fmt.Sprintf("host clock differs from Redis by %v (check NTP on both)", skew)
			}
			add("clock", OK, detail, "")
		}
		if f.Redis.MaxMemory > 0 {
			pct := float64(f.Redis.UsedMemory) * 100 / float64(f.Redis.MaxMemory)
			if pct > 85 {
				add("redis_memory", Warn, fmt.Sprintf("Redis uses %.0f%% of maxmemory", pct),
					"raise maxmemory or look for growing keys (redis-cli --bigkeys); noeviction refuses writes when full")
			} else {
				add("redis_memory", OK, fmt.Sprintf("Redis uses %.0f%% of maxmemory", pct), "")
			}
		}
		if r.Mode == "degraded" {
			add("mode", Crit, "degraded: sales are journaled only and applied to Redis when it returns",
				"restore Redis; nothing is lost meanwhile")
		} else {
			add("mode", OK, "normal", "")
		}
		switch {
		case f.FallbackActive && !f.Redis.OK:
			add("limiter", OK, "local fallback limiter active (Redis unreachable)", "")
		case f.FallbackActive:
			// The fallback is held one full window after Redis returns, on
			// purpose: a flapping Redis must not reset every till's budget.
			add("limiter", OK, fallbackHold(f.Now, f.FallbackHeldUntil), "")
		default:
			add("limiter", OK, fmt.Sprintf("%d requests denied since start", f.LimiterDenied), "")
		}
	}

	switch {
	case stalledFor > 0 && th.BacklogCritAge > 0 && oldestAge > th.BacklogCritAge:
		add("hq", Crit, fmt.Sprintf("HQ link up but nothing acknowledged for %s; %d transactions waiting, oldest %s",
			human(stalledFor), f.HQ.Backlog, human(oldestAge)),
			"check the WAN and HQ (posedge-hq and its NATS server); sales are safe in the journal (posedge journal backup)")
	case stalledFor > 0:
		add("hq", Warn, fmt.Sprintf("HQ link up but nothing acknowledged for %s; %d transactions waiting", human(stalledFor), f.HQ.Backlog),
			"check the WAN and HQ (posedge-hq and its NATS server); they are sent when HQ answers")
	case !f.HQ.Connected && f.HQ.Backlog > 0 && th.BacklogCritAge > 0 && oldestAge > th.BacklogCritAge:
		add("hq", Crit, fmt.Sprintf("HQ unreachable; %d transactions waiting, oldest %s", f.HQ.Backlog, human(oldestAge)),
			"check the WAN and hq.nats_url; sales are safe in the journal (posedge journal backup)")
	case !f.HQ.Connected && f.HQ.Backlog > 0:
		add("hq", Warn, fmt.Sprintf("HQ unreachable; %d transactions waiting", f.HQ.Backlog),
			"check the WAN link and hq.nats_url; they are sent when it returns")
	case !f.HQ.Connected && f.DaemonUp:
		add("hq", OK, "HQ unreachable, nothing waiting", "")
	case f.DaemonUp:
		add("hq", OK, fmt.Sprintf("connected; backlog %d", f.HQ.Backlog), "")
	}

	confirmCheck(f, th, add)

	switch {
	case f.Journal.Damaged:
		add("journal", Crit, "journal damaged: "+f.Journal.Error,
			"posedge will not serve on it: stop the service, run `posedge journal salvage --config FILE` (it keeps the damaged file), then start posedge")
	case f.Journal.Error != "":
		add("journal", Crit, "journal unreadable: "+f.Journal.Error, "check journal.path and its disk")
	case f.Journal.DiskFree < 0:
		add("disk", OK, fmt.Sprintf("free space unknown (could not read it); journal %s, %d rows", bytesHuman(f.Journal.SizeBytes), f.Journal.Rows), "")
	case th.CritFreeBytes > 0 && f.Journal.DiskFree < th.CritFreeBytes:
		add("disk", Crit, fmt.Sprintf("%s free on the journal's disk", bytesHuman(f.Journal.DiskFree)),
			"free disk space now: sales are refused when the journal cannot grow")
	case th.WarnFreeBytes > 0 && f.Journal.DiskFree < th.WarnFreeBytes:
		add("disk", Warn, fmt.Sprintf("%s free on the journal's disk", bytesHuman(f.Journal.DiskFree)), "free disk space soon")
	default:
		add("disk", OK, fmt.Sprintf("%s free; journal %s, %d rows", bytesHuman(f.Journal.DiskFree), bytesHuman(f.Journal.SizeBytes), f.Journal.Rows), "")
	}
	if th.QuotaBytes > 0 && f.Journal.SizeBytes > th.QuotaBytes {
		add("journal_quota", Warn, fmt.Sprintf("journal %s is over its quota %s", bytesHuman(f.Journal.SizeBytes), bytesHuman(th.QuotaBytes)),
			"is HQ acknowledging? synced rows are pruned after journal.retention")
	}
	if f.Journal.Quarantined > 0 {
		add("quarantine", Warn, fmt.Sprintf("%d transactions refused by HQ", f.Journal.Quarantined),
			"list: posedge sync quarantine list; resend: posedge sync quarantine retry")
	}
	if n := len(f.Journal.Unappliable); n > 0 {
		add("unappliable", Warn, fmt.Sprintf("%d transactions Redis cannot apply, set aside: flow %s", n, strings.Join(f.Journal.Unappliable, ", ")),
			"list: posedge journal quarantine list; after fixing the cause: posedge journal quarantine retry")
	}
	if f.Reconciliation > 0 {
		add("reconciliation", Warn, fmt.Sprintf("%d differences between Redis and the journal corrected", f.Reconciliation),
			"see the log for what differed; stock drift: a sale bypassed posedge")
	}
	if f.Catalog != nil {
		r.Catalog = catalogCheck(f, th, add)
	}
	if len(f.Terminals) > 0 {
		ids := make([]string, 0, len(f.Terminals))
		r.Terminals = map[string]string{}
		for id, at := range f.Terminals {
			ids = append(ids, id)
			r.Terminals[id] = at.UTC().Format(time.RFC3339)
		}
		add("terminals", OK, terminalsDetail(f.Now, f.Terminals, ids), "")
	}

	r.Status = OK
	for _, c := range r.Checks {
		if rank(c.Status) > rank(r.Status) {
			r.Status = c.Status
		}
	}
	return r
}

// catalogCheck reports the catalog watch: WARN when it has been down
// longer than hq.catalog_stale_after (the tills sell at prices that may
// be out of date).
func catalogCheck(f Facts, th Thresholds, add func(name, level, detail, hint string)) *CatalogReport {
	c := f.Catalog
	rep := &CatalogReport{Revision: c.Revision, Watching: c.Watching}
	applied := "no change applied yet"
	if c.AppliedAt != nil {
		s := c.AppliedAt.UTC().Format(time.RFC3339)
		rep.AppliedAt = &s
		applied = fmt.Sprintf("last change applied %s ago", human(f.Now.Sub(*c.AppliedAt)))
	}
	switch {
	case c.NotInitialised:
		add("catalog", OK, "catalog not initialised yet: the journal is from a posedge before the catalog; the daemon adds it at its next start", "")
	case c.Watching:
		add("catalog", OK, fmt.Sprintf("watching HQ's catalog; revision %d, %s", c.Revision, applied), "")
	case c.DownSince.IsZero() || !f.DaemonUp:
		add("catalog", OK, fmt.Sprintf("catalog revision %d, %s; not watching", c.Revision, applied), "")
	case th.CatalogStaleAfter > 0 && f.Now.Sub(c.DownSince) > th.CatalogStaleAfter:
		add("catalog", Warn, fmt.Sprintf("catalog watch down for %s; prices as of revision %d, %s", human(f.Now.Sub(c.DownSince)), c.Revision, applied),
			"check the WAN, hq.nats_url and hq.catalog_bucket; tills keep selling at the prices applied, HQ's changes arrive when the watch is back")
	default:
		add("catalog", OK, fmt.Sprintf("catalog watch down for %s (revision %d); retrying", human(f.Now.Sub(c.DownSince)), c.Revision), "")
	}
	return rep
}

// stall is how long a link that is up has had no publish acknowledged
// while a backlog waits, when that is at least StallAfter; else 0.
func stall(f Facts) time.Duration {
	if !f.HQ.Connected || f.HQ.Backlog == 0 || f.HQ.AwaitingAckSince == nil {
		return 0
	}
	d := f.Now.Sub(*f.HQ.AwaitingAckSince)
	if f.HQ.LastAckAt != nil && f.Now.Sub(*f.HQ.LastAckAt) < d {
		d = f.Now.Sub(*f.HQ.LastAckAt)
	}
	if d < StallAfter {
		return 0
	}
	return d
}

// terminalsDetail keeps the line short for a store with many tills:
// up to four are listed, else the count, the newest and the stalest (the
// JSON has them all).
func terminalsDetail(now time.Time, seen map[string]time.Time, ids []string) string {
	ago := func(id string) string { return fmt.Sprintf("%s %s ago", id, human(now.Sub(seen[id]))) }
	sort.Strings(ids)
	if len(ids) <= 4 {
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = ago(id)
		}
		return "last seen: " + strings.Join(parts, ", ")
	}
	byAge := append([]string(nil), ids...)
	sort.SliceStable(byAge, func(i, j int) bool { return seen[byAge[i]].After(seen[byAge[j]]) })
	return fmt.Sprintf("%d seen; newest %s, stalest %s", len(ids), ago(byAge[0]), ago(byAge[len(byAge)-1]))
}

// human is a duration as a technician reads it: 41s, 12m5s, 2h5m, 3d4h.
func human(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// fallbackHold words the fallback held after Redis returned, with the time
// it has left. The hold is one full window on purpose: a flapping Redis
// must not hand every till a fresh budget on top of what it spent locally.
func fallbackHold(now, until time.Time) string {
	const why = "after Redis returned (deliberate: one full window)"
	switch {
	case until.IsZero():
		return "local fallback limiter held " + why
	case !until.After(now):
		return "local fallback limiter's hold " + why + " is over; Redis decides again from the next request"
	}
	return "local fallback limiter held " + human((until.Sub(now) + time.Second - 1).Truncate(time.Second)) + " more " + why
}

// lagDetail describes replication lag, which the contract does not judge:
// informational only.
func lagDetail(lag int64) string {
	if lag <= 0 {
		return ""
	}
	return fmt.Sprintf(", replication lag up to %d s", lag)
}

func masterHint(m string) string {
	if m == "" {
		return ""
	}
	return " (master " + m + ")"
}

func bytesHuman(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// ConfigErrorReport is the UNKNOWN report of a status command that cannot
// read its config: it knows neither where the daemon listens nor where
// the journal is.
func ConfigErrorReport(path, err string) Report {
	return Report{Status: Unknown, Mode: "unknown",
		Checks: []Check{{Name: "config", Status: Unknown, Detail: err,
			Hint: "fix the config, then check it: posedge check-config --config " + path}}}
}

// confirmCheck reports the rows JetStream acknowledged that posedge-hq
// has not confirmed storing (contract §5): OK while they are few and
// young (each waits hq.confirm_after before it is asked about), WARN
// when one stays unconfirmed past th.UnconfirmedWarnAfter although
// posedge-hq answers the store's questions — HQ says it lacks rows that
// are resent to it, so something between JetStream and HQ's database
// drops them. While posedge-hq does not answer, the hq check speaks.
func confirmCheck(f Facts, th Thresholds, add func(name, level, detail, hint string)) {
	if f.HQ.Unconfirmed == 0 {
		return
	}
	var age time.Duration
	if f.HQ.OldestUnconfirmedAck != nil {
		age = f.Now.Sub(*f.HQ.OldestUnconfirmedAck)
	}
	answers := f.HQ.HQAnsweredAt != nil && f.Now.Sub(*f.HQ.HQAnsweredAt) < th.UnconfirmedWarnAfter
	if th.UnconfirmedWarnAfter > 0 && age > th.UnconfirmedWarnAfter && answers {
		add("hq_confirm", Warn, fmt.Sprintf("%d transactions acknowledged by JetStream not confirmed stored by posedge-hq, the oldest acknowledged %s ago; posedge-hq answers but lacks them",
			f.HQ.Unconfirmed, human(age)),
			"they are resent from the journal and never pruned meanwhile; check posedge-hq's log (database, quarantine, conflicts) and that its consumer reads the stream")
		return
	}
	add("hq_confirm", OK, fmt.Sprintf("%d transactions awaiting posedge-hq's confirmation", f.HQ.Unconfirmed), "")
}
