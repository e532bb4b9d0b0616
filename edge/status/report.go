package status

// Report is the object `posedge status --json` prints (contract §1).
type Report struct {
	Status        Level             `json:"status"`
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
	// SeenAt is when the facts above were seen (RFC 3339); absent when
	// never (the daemon is down, or Redis not probed yet).
	SeenAt *string `json:"seen_at,omitempty"`
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
	Status Level  `json:"status"`
	Detail string `json:"detail"`
	Hint   string `json:"hint,omitempty"`
	// AgeSeconds is how old the fact judged is, when it was seen by a
	// probe rather than read for this report; absent otherwise. Stale:
	// older than status believes (the check is then unknown).
	AgeSeconds *int64 `json:"age_seconds,omitempty"`
	Stale      bool   `json:"stale,omitempty"`
}
