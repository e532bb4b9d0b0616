package health

import "time"

// One fact type per subsystem. Each carries SeenAt, the time its owner
// last reported it (zero: never reported); edge/status judges them and
// shows how old they are. A fact is written once, by its owner, and read
// as it is: there is no second copy to keep in step.

// Redis is what the last probe of the Sentinels and the master saw, or
// the failed call a subsystem reported since.
type Redis struct {
	SeenAt       time.Time
	OK           bool // the master answers and takes writes
	Master       string
	Replicas     int // online replicas of the master
	WantReplicas int // redis.replicas
	Error        string
	UsedMemory   int64
	MaxMemory    int64
	Sentinels    int // sentinels that answered
	SentinelsAll int // sentinels configured
	ClockSkew    time.Duration
	// MaxLagSeconds is the largest replication lag the master reports
	// (seconds since a replica's last ack); 0 when none or unknown.
	MaxLagSeconds int64
	// DownReplicas are the replicas the Sentinels know but see down or
	// disconnected (host:port), so a technician knows which one to look at.
	DownReplicas []string
	// Latency is the fastest call of the probe: when even that one is
	// slow, every call is. 0 when unknown.
	Latency time.Duration
}

// Ledger is the money path's mode. SeenAt is when it last changed: the
// ledger reports each change as it happens, so the fact never goes stale.
type Ledger struct {
	SeenAt   time.Time
	Degraded bool // sales are journaled only, Redis is not written
}

// Limiter is the rate limiter's state, read from it when asked (it is
// in-memory and costs nothing to read).
type Limiter struct {
	SeenAt   time.Time
	Fallback bool // the local fallback limiter decides (Redis failed it)
	// HeldUntil is when the fallback's deliberate hold after Redis
	// returned ends; zero while Redis does not answer, or no hold.
	HeldUntil time.Time
	Denied    int64 // requests denied since start
}

// Journal is the journal file and its disk. The prober reports whether it
// answers (SeenAt, Error); ReadJournal fills the figures when asked.
type Journal struct {
	SeenAt      time.Time
	Path        string
	SizeBytes   int64
	DiskFree    int64 // -1: could not be read
	Rows        int64
	Quarantined int64
	Unapplied   int64
	Unappliable []string // flow numbers Redis refused to apply, set aside
	MaxFlowNo   string
	Error       string // non-empty: the journal could not be read
	Damaged     bool   // failed its integrity check: the daemon refuses to serve on it
}

// HQ is the link to headquarters: the replay's connection, the acks it
// reported as they came, and the backlog the journal holds.
type HQ struct {
	SeenAt     time.Time
	Connected  bool
	LastSyncAt *time.Time
	LastError  string
	RatePerSec float64
	// HQAnsweredAt is the last time posedge-hq answered a have query
	// (delivery confirmation); nil before the first.
	HQAnsweredAt *time.Time
	// LastAckAt is when HQ last acknowledged a publish (or the outbox was
	// found empty); AwaitingAckSince is when the oldest publish still
	// awaiting an ack went out, nil when none does.
	LastAckAt        *time.Time
	AwaitingAckSince *time.Time
	// The backlog, from the journal (ReadJournal).
	Backlog        int64
	BacklogBytes   int64
	OldestUnsynced *time.Time
	// Unconfirmed counts rows JetStream acknowledged that posedge-hq has
	// not confirmed storing; OldestUnconfirmedAck is the earliest ack
	// among them.
	Unconfirmed          int64
	OldestUnconfirmedAck *time.Time
}

// Catalog is the watch of HQ's item master.
type Catalog struct {
	SeenAt    time.Time
	Revision  uint64     // bucket revision applied through
	AppliedAt *time.Time // when the last change was applied; nil: never
	Watching  bool
	DownSince time.Time // when the watch stopped, while !Watching; zero: unknown
	// NotInitialised: the journal, read while the daemon is down, was
	// written by a posedge before the catalog (its next start adds it).
	NotInitialised bool
}
