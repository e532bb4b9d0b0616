package hqdb

import (
	"encoding/json"
	"time"
)

// StoreEntry is one store of the fleet view (contract §7).
type StoreEntry struct {
	StoreID         string
	Version         string // from the last heartbeat
	LastHeartbeatAt time.Time
	LastReceivedAt  time.Time // last message of any kind
	Transactions    int64
	Backlog         int64
	OldestUnsentAt  time.Time
	// ClockOffsetMS is the store's clock minus HQ's at the last
	// heartbeat: its sent_at minus the time posedge-hq received it. It
	// includes the heartbeat's transit (normally milliseconds; longer
	// when the heartbeat waited in the stream while posedge-hq was
	// down), so it is good to about a second, enough for the 5 s alert.
	ClockOffsetMS  int64
	HasHeartbeat   bool
	IncompleteDays int64
	Quarantined    int64
	Conflicts      int64
	Silent         bool
}

// MarshalJSON writes the §7 field names, times never seen as null.
func (e StoreEntry) MarshalJSON() ([]byte, error) {
	ts := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		u := t.UTC()
		return &u
	}
	var offset *int64
	if e.HasHeartbeat {
		offset = &e.ClockOffsetMS
	}
	return json.Marshal(struct {
		StoreID         string     `json:"store_id"`
		Version         string     `json:"version"`
		LastHeartbeatAt *time.Time `json:"last_heartbeat_at"`
		LastReceivedAt  *time.Time `json:"last_received_at"`
		Transactions    int64      `json:"transactions"`
		Backlog         int64      `json:"backlog"`
		OldestUnsentAt  *time.Time `json:"oldest_unsent_at"`
		ClockOffsetMS   *int64     `json:"clock_offset_ms"`
		IncompleteDays  int64      `json:"incomplete_days"`
		Quarantined     int64      `json:"quarantined"`
		Conflicts       int64      `json:"conflicts"`
		Silent          bool       `json:"silent"`
	}{e.StoreID, e.Version, ts(e.LastHeartbeatAt), ts(e.LastReceivedAt), e.Transactions, e.Backlog,
		ts(e.OldestUnsentAt), offset, e.IncompleteDays, e.Quarantined, e.Conflicts, e.Silent})
}

// UnmarshalJSON reads an entry as GET /v1/stores writes it (MarshalJSON),
// for `posedge-hq stores`.
func (e *StoreEntry) UnmarshalJSON(b []byte) error {
	var w struct {
		StoreID         string     `json:"store_id"`
		Version         string     `json:"version"`
		LastHeartbeatAt *time.Time `json:"last_heartbeat_at"`
		LastReceivedAt  *time.Time `json:"last_received_at"`
		Transactions    int64      `json:"transactions"`
		Backlog         int64      `json:"backlog"`
		OldestUnsentAt  *time.Time `json:"oldest_unsent_at"`
		ClockOffsetMS   *int64     `json:"clock_offset_ms"`
		IncompleteDays  int64      `json:"incomplete_days"`
		Quarantined     int64      `json:"quarantined"`
		Conflicts       int64      `json:"conflicts"`
		Silent          bool       `json:"silent"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	t := func(p *time.Time) time.Time {
		if p == nil {
			return time.Time{}
		}
		return p.UTC()
	}
	*e = StoreEntry{StoreID: w.StoreID, Version: w.Version, LastHeartbeatAt: t(w.LastHeartbeatAt),
		LastReceivedAt: t(w.LastReceivedAt), Transactions: w.Transactions, Backlog: w.Backlog,
		OldestUnsentAt: t(w.OldestUnsentAt), IncompleteDays: w.IncompleteDays, Quarantined: w.Quarantined,
		Conflicts: w.Conflicts, Silent: w.Silent}
	if w.ClockOffsetMS != nil {
		e.HasHeartbeat, e.ClockOffsetMS = true, *w.ClockOffsetMS
	}
	return nil
}

// FleetRow is what a backend reads per store in one query over the
// stores table (kept per batch on ingest), the last heartbeat and the
// counts of conflicts and quarantined rows.
type FleetRow struct {
	StoreID                string
	Transactions           int64
	LastSeenAt             time.Time
	Version                string
	HBSentAt, HBReceivedAt time.Time
	Backlog                int64
	OldestUnsent           string
	Conflicts, Quarantined int64
}

// AssembleFleet makes the entries of rows, with each store's incomplete
// days from rep and silent judged at now.
func AssembleFleet(rows []FleetRow, rep Report, now time.Time, silentAfter time.Duration) []StoreEntry {
	incomplete := map[string]int64{}
	for _, d := range rep.Incomplete {
		incomplete[d.StoreID]++
	}
	out := make([]StoreEntry, 0, len(rows))
	for _, r := range rows {
		e := StoreEntry{StoreID: r.StoreID, Version: r.Version, LastReceivedAt: r.LastSeenAt,
			Transactions: r.Transactions, Backlog: r.Backlog, IncompleteDays: incomplete[r.StoreID],
			Quarantined: r.Quarantined, Conflicts: r.Conflicts,
			Silent: now.Sub(r.LastSeenAt) > silentAfter}
		if !r.HBReceivedAt.IsZero() {
			e.HasHeartbeat, e.LastHeartbeatAt = true, r.HBReceivedAt
			e.ClockOffsetMS = r.HBSentAt.Sub(r.HBReceivedAt).Milliseconds()
		}
		if t, err := time.Parse(time.RFC3339Nano, r.OldestUnsent); err == nil {
			e.OldestUnsentAt = t
		}
		out = append(out, e)
	}
	return out
}

// FleetSelect reads the rows of FleetRow: each store with its last
// heartbeat and its counts of conflicts and quarantined rows.
const FleetSelect = `SELECT s.store_id, s.txn_count, s.last_seen_at,
		COALESCE(h.version, ''), h.sent_at, h.received_at, COALESCE(h.backlog, 0), COALESCE(h.oldest_unsent, ''),
		(SELECT count(*) FROM conflicts c WHERE c.store_id = s.store_id),
		(SELECT count(*) FROM quarantine q WHERE q.store_id = s.store_id)
	FROM stores s LEFT JOIN heartbeats h ON h.store_id = s.store_id
	ORDER BY s.store_id`

// WatermarksSelect reads the stores table as Watermark wants it; a
// backend adds its WHERE or ORDER BY.
const WatermarksSelect = `SELECT store_id, txn_count, max_flow_no, last_created_at, last_received_at, last_seen_at FROM stores`

// CompletenessSelect pairs every manifest with the day totals stored for
// it (zero where none): the rows Completeness compares.
const CompletenessSelect = `SELECT m.store_id, m.terminal_id, m.date,
		m.sales, m.sales_cents, m.refunds, m.refund_cents,
		COALESCE(d.sales, 0), COALESCE(d.sales_cents, 0), COALESCE(d.refunds, 0), COALESCE(d.refund_cents, 0)
	FROM manifests m LEFT JOIN day_totals d
		ON d.store_id = m.store_id AND d.terminal_id = m.terminal_id AND d.business_date = m.date
	ORDER BY m.store_id, m.date, m.terminal_id`
