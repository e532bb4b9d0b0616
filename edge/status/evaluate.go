package status

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Evaluate judges the facts by the contract's rules, one check function
// per subsystem. Only those rules turn a store WARN or CRIT; every other
// check is informational, and a fact gone stale is UNKNOWN.
func Evaluate(f Facts, th Thresholds) Report {
	r := Report{Version: f.Version, StoreID: f.StoreID, UptimeSeconds: f.UptimeSeconds, Mode: mode(f, th),
		GeneratedAt: f.Now.UTC().Format(time.RFC3339)}
	c := &checks{now: f.Now}
	r.Redis, r.HQ, r.Journal = redisReport(f), hqReport(f), journalReport(f)

	plaintextCheck(f, c)
	daemonCheck(f, c)
	if f.DaemonUp {
		redisChecks(f, th, c)
		modeCheck(r.Mode, c)
		limiterCheck(f, c)
	}
	hqCheck(f, th, c)
	confirmCheck(f, th, c)
	journalChecks(f, th, c)
	reconciliationCheck(f, c)
	if f.Catalog != nil {
		r.Catalog = catalogCheck(f, th, c)
	}
	r.Terminals = terminalsCheck(f, c)

	r.Checks = c.list
	r.Status = OK
	for _, ch := range r.Checks {
		if rank(ch.Status) > rank(r.Status) {
			r.Status = ch.Status
		}
	}
	return r
}

// checks collects the report's lines in order.
type checks struct {
	now  time.Time
	list []Check
}

func (c *checks) add(name string, level Level, detail, hint string) {
	c.list = append(c.list, Check{Name: name, Status: level, Detail: detail, Hint: hint})
}

// addSeen adds a check judged on a fact seen at seen (zero: unknown, no
// age given).
func (c *checks) addSeen(name string, level Level, detail, hint string, seen time.Time) {
	c.add(name, level, detail, hint)
	if !seen.IsZero() {
		age := max(int64(c.now.Sub(seen)/time.Second), 0)
		c.list[len(c.list)-1].AgeSeconds = &age
	}
}

// mode is the report's mode: only the daemon knows it, so the offline
// report must not claim "normal" for a store that is not answering.
func mode(f Facts, th Thresholds) string {
	switch {
	case !f.DaemonUp:
		return "unknown"
	case f.Ledger.Degraded || (!f.Redis.OK && !redisStale(f, th)):
		return "degraded"
	}
	return "normal"
}

// redisStale: the Redis fact is older than status believes.
func redisStale(f Facts, th Thresholds) bool {
	return f.DaemonUp && th.StaleAfter > 0 && !f.Redis.SeenAt.IsZero() && f.Now.Sub(f.Redis.SeenAt) > th.StaleAfter
}

func plaintextCheck(f Facts, c *checks) {
	// Informational (the contract's rules alone turn a store WARN), shown
	// whether or not the daemon answers.
	if len(f.Plaintext) > 0 {
		c.add("plaintext", OK, "warning: "+strings.Join(f.Plaintext, "; "),
			"configure TLS for these links, or keep them on a network no one else reaches (docs/security.md)")
	}
}

func daemonCheck(f Facts, c *checks) {
	if !f.DaemonUp {
		c.add("daemon", Crit, "posedge daemon not answering: "+f.DaemonError,
			"is the posedge service running? (systemctl status posedge / posedge status-service); check its log")
		return
	}
	c.add("daemon", OK, fmt.Sprintf("posedge %s up %s", f.Version, human(time.Duration(f.UptimeSeconds)*time.Second)), "")
}

func redisReport(f Facts) RedisReport {
	rr := RedisReport{OK: f.Redis.OK, Master: f.Redis.Master, Replicas: f.Redis.Replicas, Error: f.Redis.Error,
		Sentinels: f.Redis.Sentinels, UsedMemory: f.Redis.UsedMemory, MaxMemory: f.Redis.MaxMemory,
		LatencyMS: float64(f.Redis.Latency.Microseconds()) / 1000}
	if !f.Redis.SeenAt.IsZero() {
		s := f.Redis.SeenAt.UTC().Format(time.RFC3339)
		rr.SeenAt = &s
	}
	return rr
}

// redisChecks judge the Redis fact: the master, its replicas, latency,
// Sentinels, clock and memory, each line with the fact's age. A stale
// fact is one UNKNOWN line instead: what it said is no longer believed.
func redisChecks(f Facts, th Thresholds, c *checks) {
	rd, seen := f.Redis, f.Redis.SeenAt
	if redisStale(f, th) {
		last := "the master answered"
		if !rd.OK {
			last = "error: " + rd.Error
		}
		c.addSeen("redis", Unknown, fmt.Sprintf("stale, not judged: no probe of Redis since the last (%s)", last),
			"the daemon's health prober has not reported since: check the posedge log; restart posedge if it persists", seen)
		c.list[len(c.list)-1].Stale = true
		return
	}
	if !rd.OK {
		c.addSeen("redis", Crit, "Redis master unreachable or refusing writes: "+rd.Error,
			"sales go on in degraded mode; check redis-server and redis-sentinel"+masterHint(rd.Master), seen)
	} else {
		c.addSeen("redis", OK, "master "+rd.Master+" answers and takes writes", "", seen)
	}
	if rd.OK && rd.Replicas < rd.WantReplicas {
		detail := fmt.Sprintf("%d of %d replicas online", rd.Replicas, rd.WantReplicas)
		if len(rd.DownReplicas) > 0 {
			detail += "; down: " + strings.Join(rd.DownReplicas, ", ")
		}
		c.addSeen("replicas", Warn, detail,
			"a replica is down or resyncing: check the redis-server service of the replica named", seen)
	} else if rd.OK {
		c.addSeen("replicas", OK, fmt.Sprintf("%d of %d replicas online%s", rd.Replicas, rd.WantReplicas, lagDetail(rd.MaxLagSeconds)), "", seen)
	}
	if rd.OK && rd.Latency > 0 {
		// Rounded for reading, never to 0s: a loopback Redis answers
		// in tens of microseconds.
		lat := rd.Latency.Round(time.Millisecond / 10)
		if lat < time.Millisecond {
			lat = max(rd.Latency.Round(time.Microsecond), time.Microsecond)
		}
		if th.RedisTimeout > 0 && rd.Latency >= th.RedisTimeout/2 {
			c.addSeen("redis_latency", Warn, fmt.Sprintf("Redis answers slowly: even its fastest call took %v (redis.timeout %v)", lat, th.RedisTimeout),
				"calls that reach redis.timeout fail and sales go on in degraded mode; check the Redis host's load, disk and network", seen)
		} else {
			c.addSeen("redis_latency", OK, fmt.Sprintf("Redis answers in %v", lat), "", seen)
		}
	}
	if rd.SentinelsAll > 0 {
		// Informational: the contract lets no Sentinel rule turn a store
		// WARN, but a technician should see a lost quorum coming.
		detail := fmt.Sprintf("%d of %d sentinels answer", rd.Sentinels, rd.SentinelsAll)
		if quorum := rd.SentinelsAll/2 + 1; rd.Sentinels < quorum {
			detail += fmt.Sprintf("; a failover needs %d (check redis-sentinel)", quorum)
		}
		c.addSeen("sentinels", OK, detail, "", seen)
	}
	if rd.OK && rd.ClockSkew != 0 {
		skew := rd.ClockSkew.Round(time.Millisecond)
		detail := "host and Redis clocks agree"
		if skew > time.Second || skew < -time.Second {
			detail = fmt.Sprintf("host clock differs from Redis by %v (check NTP on both)", skew)
		}
		c.addSeen("clock", OK, detail, "", seen)
	}
	if rd.MaxMemory > 0 {
		pct := float64(rd.UsedMemory) * 100 / float64(rd.MaxMemory)
		if pct > 85 {
			c.addSeen("redis_memory", Warn, fmt.Sprintf("Redis uses %.0f%% of maxmemory", pct),
				"raise maxmemory or look for growing keys (redis-cli --bigkeys); noeviction refuses writes when full", seen)
		} else {
			c.addSeen("redis_memory", OK, fmt.Sprintf("Redis uses %.0f%% of maxmemory", pct), "", seen)
		}
	}
}

// modeCheck: the ledger reports its mode as it changes, so this line is
// never older than the fault that caused it.
func modeCheck(mode string, c *checks) {
	if mode == "degraded" {
		c.add("mode", Crit, "degraded: sales are journaled only and applied to Redis when it returns",
			"restore Redis; nothing is lost meanwhile")
		return
	}
	c.add("mode", OK, "normal", "")
}

func limiterCheck(f Facts, c *checks) {
	switch l := f.Limiter; {
	case l.Fallback && !f.Redis.OK:
		c.add("limiter", OK, "local fallback limiter active (Redis unreachable)", "")
	case l.Fallback:
		// The fallback is held one full window after Redis returns, on
		// purpose: a flapping Redis must not reset every till's budget.
		c.add("limiter", OK, fallbackHold(f.Now, l.HeldUntil), "")
	default:
		c.add("limiter", OK, fmt.Sprintf("%d requests denied since start", l.Denied), "")
	}
}

func hqReport(f Facts) HQReport {
	h := HQReport{Connected: f.HQ.Connected, Backlog: f.HQ.Backlog, BacklogBytes: f.HQ.BacklogBytes,
		RatePerSec: f.HQ.RatePerSec, LastError: f.HQ.LastError, Stalled: stall(f) > 0, Unconfirmed: f.HQ.Unconfirmed,
		OldestUnsyncedAgeSeconds: int64(oldestUnsynced(f) / time.Second)}
	if f.HQ.LastSyncAt != nil {
		s := f.HQ.LastSyncAt.UTC().Format(time.RFC3339)
		h.LastSyncAt = &s
	}
	if f.HQ.LastAckAt != nil {
		s := f.HQ.LastAckAt.UTC().Format(time.RFC3339)
		h.LastAckAt = &s
	}
	return h
}

// oldestUnsynced is the age of the oldest transaction not yet sent.
func oldestUnsynced(f Facts) time.Duration {
	if f.HQ.OldestUnsynced == nil {
		return 0
	}
	return max(f.Now.Sub(*f.HQ.OldestUnsynced), 0)
}

func hqCheck(f Facts, th Thresholds, c *checks) {
	stalledFor, oldestAge := stall(f), oldestUnsynced(f)
	switch {
	case stalledFor > 0 && th.BacklogCritAge > 0 && oldestAge > th.BacklogCritAge:
		c.add("hq", Crit, fmt.Sprintf("HQ link up but nothing acknowledged for %s; %d transactions waiting, oldest %s",
			human(stalledFor), f.HQ.Backlog, human(oldestAge)),
			"check the WAN and HQ (posedge-hq and its NATS server); sales are safe in the journal (posedge journal backup)")
	case stalledFor > 0:
		c.add("hq", Warn, fmt.Sprintf("HQ link up but nothing acknowledged for %s; %d transactions waiting", human(stalledFor), f.HQ.Backlog),
			"check the WAN and HQ (posedge-hq and its NATS server); they are sent when HQ answers")
	case !f.HQ.Connected && f.HQ.Backlog > 0 && th.BacklogCritAge > 0 && oldestAge > th.BacklogCritAge:
		c.add("hq", Crit, fmt.Sprintf("HQ unreachable; %d transactions waiting, oldest %s", f.HQ.Backlog, human(oldestAge)),
			"check the WAN and hq.nats_url; sales are safe in the journal (posedge journal backup)")
	case !f.HQ.Connected && f.HQ.Backlog > 0:
		c.add("hq", Warn, fmt.Sprintf("HQ unreachable; %d transactions waiting", f.HQ.Backlog),
			"check the WAN link and hq.nats_url; they are sent when it returns")
	case !f.HQ.Connected && f.DaemonUp:
		c.add("hq", OK, "HQ unreachable, nothing waiting", "")
	case f.DaemonUp:
		c.add("hq", OK, fmt.Sprintf("connected; backlog %d", f.HQ.Backlog), "")
	}
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

// confirmCheck reports the rows JetStream acknowledged that posedge-hq
// has not confirmed storing (contract §5): OK while they are few and
// young (each waits hq.confirm_after before it is asked about), WARN
// when one stays unconfirmed past th.UnconfirmedWarnAfter although
// posedge-hq answers the store's questions — HQ says it lacks rows that
// are resent to it, so something between JetStream and HQ's database
// drops them. While posedge-hq does not answer, the hq check speaks.
func confirmCheck(f Facts, th Thresholds, c *checks) {
	if f.HQ.Unconfirmed == 0 {
		return
	}
	// The age counts from a row's first ack (journal first_acked_at): a
	// row resent forever stays old, and WARNs.
	var age time.Duration
	if f.HQ.OldestUnconfirmedAck != nil {
		age = f.Now.Sub(*f.HQ.OldestUnconfirmedAck)
	}
	answers := f.HQ.HQAnsweredAt != nil && f.Now.Sub(*f.HQ.HQAnsweredAt) < th.UnconfirmedWarnAfter
	if th.UnconfirmedWarnAfter > 0 && age > th.UnconfirmedWarnAfter && answers {
		c.add("hq_confirm", Warn, fmt.Sprintf("%d transactions acknowledged by JetStream not confirmed stored by posedge-hq, the oldest first acknowledged %s ago; posedge-hq answers but lacks them",
			f.HQ.Unconfirmed, human(age)),
			"they are resent from the journal and never pruned meanwhile; check posedge-hq's log (database, quarantine, conflicts) and that its consumer reads the stream")
		return
	}
	c.add("hq_confirm", OK, fmt.Sprintf("%d transactions awaiting posedge-hq's confirmation", f.HQ.Unconfirmed), "")
}

func journalReport(f Facts) JournalReport {
	return JournalReport{Path: f.Journal.Path, SizeBytes: f.Journal.SizeBytes, DiskFreeBytes: f.Journal.DiskFree,
		Rows: f.Journal.Rows, Quarantined: f.Journal.Quarantined, Unapplied: f.Journal.Unapplied}
}

// journalChecks judge the journal, its disk, its quota and the rows set
// aside (refused by HQ, or that Redis cannot apply).
func journalChecks(f Facts, th Thresholds, c *checks) {
	j := f.Journal
	switch {
	case j.Damaged:
		c.add("journal", Crit, "journal damaged: "+j.Error,
			"posedge will not serve on it: stop the service, run `posedge journal salvage --config FILE` (it keeps the damaged file), then start posedge")
	case j.Error != "":
		c.add("journal", Crit, "journal unreadable: "+j.Error, "check journal.path and its disk")
	case j.DiskFree < 0:
		c.add("disk", OK, fmt.Sprintf("free space unknown (could not read it); journal %s, %d rows", bytesHuman(j.SizeBytes), j.Rows), "")
	case th.CritFreeBytes > 0 && j.DiskFree < th.CritFreeBytes:
		c.add("disk", Crit, fmt.Sprintf("%s free on the journal's disk", bytesHuman(j.DiskFree)),
			"free disk space now: sales are refused when the journal cannot grow")
	case th.WarnFreeBytes > 0 && j.DiskFree < th.WarnFreeBytes:
		c.add("disk", Warn, fmt.Sprintf("%s free on the journal's disk", bytesHuman(j.DiskFree)), "free disk space soon")
	default:
		c.add("disk", OK, fmt.Sprintf("%s free; journal %s, %d rows", bytesHuman(j.DiskFree), bytesHuman(j.SizeBytes), j.Rows), "")
	}
	if th.QuotaBytes > 0 && j.SizeBytes > th.QuotaBytes {
		c.add("journal_quota", Warn, fmt.Sprintf("journal %s is over its quota %s", bytesHuman(j.SizeBytes), bytesHuman(th.QuotaBytes)),
			"is HQ acknowledging? synced rows are pruned after journal.retention")
	}
	if j.Quarantined > 0 {
		c.add("quarantine", Warn, fmt.Sprintf("%d transactions refused by HQ", j.Quarantined),
			"list: posedge sync quarantine list; resend: posedge sync quarantine retry")
	}
	if n := len(j.Unappliable); n > 0 {
		c.add("unappliable", Warn, fmt.Sprintf("%d transactions Redis cannot apply, set aside: flow %s", n, strings.Join(j.Unappliable, ", ")),
			"list: posedge journal quarantine list; after fixing the cause: posedge journal quarantine retry")
	}
}

func reconciliationCheck(f Facts, c *checks) {
	if f.Reconciliation > 0 {
		c.add("reconciliation", Warn, fmt.Sprintf("%d differences between Redis and the journal corrected", f.Reconciliation),
			"see the log for what differed; stock drift: a sale bypassed posedge")
	}
}

// catalogCheck reports the catalog watch: WARN when it has been down
// longer than hq.catalog_stale_after (the tills sell at prices that may
// be out of date).
func catalogCheck(f Facts, th Thresholds, c *checks) *CatalogReport {
	cat := f.Catalog
	rep := &CatalogReport{Revision: cat.Revision, Watching: cat.Watching}
	applied := "no change applied yet"
	if cat.AppliedAt != nil {
		s := cat.AppliedAt.UTC().Format(time.RFC3339)
		rep.AppliedAt = &s
		applied = fmt.Sprintf("last change applied %s ago", human(f.Now.Sub(*cat.AppliedAt)))
	}
	switch {
	case cat.NotInitialised:
		c.add("catalog", OK, "catalog not initialised yet: the journal is from a posedge before the catalog; the daemon adds it at its next start", "")
	case cat.Watching:
		c.add("catalog", OK, fmt.Sprintf("watching HQ's catalog; revision %d, %s", cat.Revision, applied), "")
	case cat.DownSince.IsZero() || !f.DaemonUp:
		c.add("catalog", OK, fmt.Sprintf("catalog revision %d, %s; not watching", cat.Revision, applied), "")
	case th.CatalogStaleAfter > 0 && f.Now.Sub(cat.DownSince) > th.CatalogStaleAfter:
		c.add("catalog", Warn, fmt.Sprintf("catalog watch down for %s; prices as of revision %d, %s", human(f.Now.Sub(cat.DownSince)), cat.Revision, applied),
			"check the WAN, hq.nats_url and hq.catalog_bucket; tills keep selling at the prices applied, HQ's changes arrive when the watch is back")
	default:
		c.add("catalog", OK, fmt.Sprintf("catalog watch down for %s (revision %d); retrying", human(f.Now.Sub(cat.DownSince)), cat.Revision), "")
	}
	return rep
}

func terminalsCheck(f Facts, c *checks) map[string]string {
	if len(f.Terminals) == 0 {
		return nil
	}
	ids := make([]string, 0, len(f.Terminals))
	seen := map[string]string{}
	for id, at := range f.Terminals {
		ids = append(ids, id)
		seen[id] = at.UTC().Format(time.RFC3339)
	}
	c.add("terminals", OK, terminalsDetail(f.Now, f.Terminals, ids), "")
	return seen
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

// ConfigErrorReport is the UNKNOWN report of a status command that cannot
// read its config: it knows neither where the daemon listens nor where
// the journal is.
func ConfigErrorReport(path, err string) Report {
	return Report{Status: Unknown, Mode: "unknown",
		Checks: []Check{{Name: "config", Status: Unknown, Detail: err,
			Hint: "fix the config, then check it: posedge check-config --config " + path}}}
}
