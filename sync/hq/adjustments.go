package hq

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Stock adjustments (contract §6) are stored once per
// (store_id, adjustment_id): a resend is a duplicate, never a second row.

const (
	insertAdjustmentSQL = `INSERT INTO stock_adjustments
		(store_id, adjustment_id, barcode, delta, reason, created_at, body, received_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (store_id, adjustment_id) DO NOTHING`
	pgInsertAdjustment = `INSERT INTO stock_adjustments
		(store_id, adjustment_id, barcode, delta, reason, created_at, body, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (store_id, adjustment_id) DO NOTHING`
	selectAdjustments = `SELECT store_id, adjustment_id, barcode, delta, reason, created_at, body FROM stock_adjustments`
)

// StockAdjustments lists a store's stock adjustments, oldest first.
func (s *SQLiteStore) StockAdjustments(ctx context.Context, storeID string) ([]StoredAdjustment, error) {
	rows, err := s.r.QueryContext(ctx, selectAdjustments+` WHERE store_id = ? ORDER BY created_at, adjustment_id`, storeID)
	if err != nil {
		return nil, fmt.Errorf("stock adjustments of %s: %w", storeID, err)
	}
	defer rows.Close()
	out := []StoredAdjustment{}
	for rows.Next() {
		var a StoredAdjustment
		var created, body string
		if err := rows.Scan(&a.StoreID, &a.AdjustmentID, &a.Barcode, &a.Delta, &a.Reason, &created, &body); err != nil {
			return nil, fmt.Errorf("stock adjustments of %s: %w", storeID, err)
		}
		a.CreatedAt, a.Body = parseTS(created), json.RawMessage(body)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("stock adjustments of %s: %w", storeID, err)
	}
	return out, nil
}

// StockAdjustments lists a store's stock adjustments, oldest first.
func (s *PostgresStore) StockAdjustments(ctx context.Context, storeID string) ([]StoredAdjustment, error) {
	rows, err := s.pool.Query(ctx, `SELECT store_id, adjustment_id, barcode, delta, reason, created_at, body::text
		FROM stock_adjustments WHERE store_id = $1 ORDER BY created_at, adjustment_id`, storeID)
	if err != nil {
		return nil, fmt.Errorf("stock adjustments of %s: %w", storeID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StoredAdjustment, error) {
		var a StoredAdjustment
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
