package postgres

import (
	"context"
	"fmt"

	"github.com/posedge/posedge/sync/hqdb"
)

const (
	pgInsertAdjustment = `INSERT INTO stock_adjustments
		(store_id, adjustment_id, barcode, delta, reason, created_at, body, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (store_id, adjustment_id) DO NOTHING`
)

// StockAdjustments lists a store's stock adjustments, oldest first.
func (s *Store) StockAdjustments(ctx context.Context, storeID string) ([]hqdb.StoredAdjustment, error) {
	rows, err := s.pool.Query(ctx, `SELECT store_id, adjustment_id, barcode, delta, reason, created_at, body::text
		FROM stock_adjustments WHERE store_id = $1 ORDER BY created_at, adjustment_id`, storeID)
	if err != nil {
		return nil, fmt.Errorf("stock adjustments of %s: %w", storeID, err)
	}
	defer rows.Close()
	out, err := scan().Adjustments(rows)
	if err != nil {
		return nil, fmt.Errorf("stock adjustments of %s: %w", storeID, err)
	}
	return out, nil
}
