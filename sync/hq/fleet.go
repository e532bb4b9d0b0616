package hq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
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

// fleetRow is what a backend reads per store in one query over the
// stores table (kept per batch on ingest), the last heartbeat and the
// counts of conflicts and quarantined rows.
type fleetRow struct {
	StoreID                string
	Transactions           int64
	LastSeenAt             time.Time
	Version                string
	HBSentAt, HBReceivedAt time.Time
	Backlog                int64
	OldestUnsent           string
	Conflicts, Quarantined int64
}

// assembleFleet makes the entries of rows, with each store's incomplete
// days from rep and silent judged at now.
func assembleFleet(rows []fleetRow, rep Report, now time.Time, silentAfter time.Duration) []StoreEntry {
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

// fleetFrom reads the fleet through a backend's row reader and its
// completeness report.
func fleetFrom(ctx context.Context, s Store, rows func(context.Context) ([]fleetRow, error), now time.Time, silentAfter time.Duration) ([]StoreEntry, error) {
	rs, err := rows(ctx)
	if err != nil {
		return nil, err
	}
	rep, err := s.Completeness(ctx, now)
	if err != nil {
		return nil, err
	}
	return assembleFleet(rs, rep, now, silentAfter), nil
}

const fleetSelect = `SELECT s.store_id, s.txn_count, s.last_seen_at,
		COALESCE(h.version, ''), h.sent_at, h.received_at, COALESCE(h.backlog, 0), COALESCE(h.oldest_unsent, ''),
		(SELECT count(*) FROM conflicts c WHERE c.store_id = s.store_id),
		(SELECT count(*) FROM quarantine q WHERE q.store_id = s.store_id)
	FROM stores s LEFT JOIN heartbeats h ON h.store_id = s.store_id
	ORDER BY s.store_id`

// Fleet lists every store heard from, sorted by store_id.
func (s *SQLiteStore) Fleet(ctx context.Context, now time.Time) ([]StoreEntry, error) {
	return fleetFrom(ctx, s, s.fleetRows, now, s.opts.SilentAfter)
}

func (s *SQLiteStore) fleetRows(ctx context.Context) ([]fleetRow, error) {
	rows, err := s.r.QueryContext(ctx, fleetSelect)
	if err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	defer rows.Close()
	out := []fleetRow{}
	for rows.Next() {
		var r fleetRow
		var seen string
		var sent, recv sql.NullString
		if err := rows.Scan(&r.StoreID, &r.Transactions, &seen, &r.Version, &sent, &recv, &r.Backlog, &r.OldestUnsent, &r.Conflicts, &r.Quarantined); err != nil {
			return nil, fmt.Errorf("read fleet: %w", err)
		}
		r.LastSeenAt = parseTS(seen)
		if sent.Valid && recv.Valid {
			r.HBSentAt, r.HBReceivedAt = parseTS(sent.String), parseTS(recv.String)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	return out, nil
}

// Fleet lists every store heard from, sorted by store_id.
func (s *PostgresStore) Fleet(ctx context.Context, now time.Time) ([]StoreEntry, error) {
	return fleetFrom(ctx, s, s.fleetRows, now, s.opts.SilentAfter)
}

func (s *PostgresStore) fleetRows(ctx context.Context) ([]fleetRow, error) {
	rows, err := s.pool.Query(ctx, fleetSelect)
	if err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	defer rows.Close()
	out := []fleetRow{}
	for rows.Next() {
		var r fleetRow
		var sent, recv *time.Time
		if err := rows.Scan(&r.StoreID, &r.Transactions, &r.LastSeenAt, &r.Version, &sent, &recv, &r.Backlog, &r.OldestUnsent, &r.Conflicts, &r.Quarantined); err != nil {
			return nil, fmt.Errorf("read fleet: %w", err)
		}
		r.LastSeenAt = r.LastSeenAt.UTC()
		if sent != nil && recv != nil {
			r.HBSentAt, r.HBReceivedAt = sent.UTC(), recv.UTC()
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	return out, nil
}
