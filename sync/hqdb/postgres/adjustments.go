package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
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
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (hqdb.StoredAdjustment, error) {
		var a hqdb.StoredAdjustment
		var body string
		err := row.Scan(&a.StoreID, &a.AdjustmentID, &a.Barcode, &a.Delta, &a.Reason, &a.CreatedAt, &body)
		a.CreatedAt, a.Body = a.CreatedAt.UTC(), json.RawMessage(body)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("stock adjustments of %s: %w", storeID, err)
	}
	return out, nil
}
