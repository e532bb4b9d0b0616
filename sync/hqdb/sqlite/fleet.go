package sqlite

import (
	"context"
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
	out, err := scan().Fleet(rows)
	if err != nil {
		return nil, fmt.Errorf("read fleet: %w", err)
	}
	return out, nil
}
