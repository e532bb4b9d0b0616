package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/posedge/posedge/sync/hqdb"
)

// Fleet lists every store heard from, sorted by store_id.
func (s *Store) Fleet(ctx context.Context, now time.Time) ([]hqdb.StoreEntry, error) {
	return hqdb.FleetFrom(ctx, s, s.fleetRows, now, s.opts.SilentAfter)
}

func (s *Store) fleetRows(ctx context.Context) ([]hqdb.FleetRow, error) {
	rows, err := s.r.QueryContext(ctx, hqdb.FleetSelect)
	if err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	defer rows.Close()
	out := []hqdb.FleetRow{}
	for rows.Next() {
		var r hqdb.FleetRow
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
