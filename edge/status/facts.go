package status

import (
	"time"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/edge/health"
)

// Facts are what the daemon (or, when it is down, the status command)
// knows, one edge/health fact per subsystem; Evaluate judges them.
type Facts struct {
	Now           time.Time
	DaemonUp      bool
	DaemonError   string
	Version       string
	StoreID       string
	UptimeSeconds int64
	Redis         health.Redis
	Ledger        health.Ledger
	Limiter       health.Limiter
	HQ            health.HQ
	Journal       health.Journal
	Catalog       *health.Catalog // nil: not known (then not reported)
	// Terminals: when each till was last seen.
	Terminals      map[string]time.Time
	Reconciliation int64 // differences found by the last reconciliation
	// Plaintext names links the config leaves in plaintext off loopback
	// (config.PlaintextWarnings).
	Plaintext []string
}

// FromSnapshot are the facts of a running daemon's health snapshot; the
// caller adds who the daemon is, the live state of the limiter and the
// replay, the journal's figures and the catalog.
func FromSnapshot(now time.Time, s health.Snapshot) Facts {
	return Facts{Now: now, DaemonUp: true, Redis: s.Redis, Ledger: s.Ledger, Journal: s.Journal, HQ: s.HQ}
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
	// StaleAfter is how old a probed fact may be before it is no longer
	// believed: its checks are UNKNOWN, never the OK it last said. 0 =
	// never stale.
	StaleAfter time.Duration
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

// StaleAfter is five probe rounds: a Redis fact older than that means
// the prober itself is stuck (a probe of a hung Redis still reports, with
// its error, within about two seconds).
const StaleAfter = 5 * health.ProbeEvery

// ThresholdsOf are the status thresholds of a config. With a hard cap
// (journal.max_bytes) and no quota, the quota is 80 % of the cap, so
// status warns well before sales are refused.
func ThresholdsOf(c *config.Config) Thresholds {
	quota := c.Journal.QuotaBytes
	if quota == 0 && c.Journal.MaxBytes > 0 {
		quota = c.Journal.MaxBytes / 10 * 8
	}
	return Thresholds{WarnFreeBytes: c.Journal.WarnFreeBytes, CritFreeBytes: c.Journal.CritFreeBytes,
		QuotaBytes: quota, BacklogCritAge: c.HQ.BacklogCritAge.D(), RedisTimeout: c.Redis.Timeout.D(),
		CatalogStaleAfter: c.HQ.CatalogStaleAfter.D(), UnconfirmedWarnAfter: UnconfirmedWarnFactor * c.HQ.ConfirmAfter.D(),
		StaleAfter: StaleAfter}
}
