package sqlite

import (
	"context"
	"fmt"

	"github.com/posedge/posedge/sync/hqdb"
)

const (
	insertAdjustmentSQL = `INSERT INTO stock_adjustments
		(store_id, adjustment_id, barcode, delta, reason, created_at, body, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (store_id, adjustment_id) DO NOTHING`

	selectAdjustments = `SELECT store_id, adjustment_id, barcode, delta, reason, created_at, body FROM stock_adjustments`
)

// StockAdjustments lists a store's stock adjustments, oldest first.
func (s *Store) StockAdjustments(ctx context.Context, storeID string) ([]hqdb.StoredAdjustment, error) {
	rows, err := s.r.QueryContext(ctx, selectAdjustments+` WHERE store_id = ? ORDER BY created_at, adjustment_id`, storeID)
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
