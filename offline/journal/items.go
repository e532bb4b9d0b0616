package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Item is the daemon's own copy of an item-master entry, kept so that
// lookups answer (stale) while Redis is down.
type Item struct {
	Barcode    string
	Name       string
	PriceCents int64
	Stock      int64
	UpdatedAt  time.Time
	Active     bool // false once HQ's catalog deactivated it (read only: set through ApplyCatalog)
}

// PutItem stores the daemon's copy of an item.
func (j *Journal) PutItem(ctx context.Context, it Item) error {
	return j.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO items (barcode, name, price_cents, stock, updated_at) VALUES (?,?,?,?,?)
			ON CONFLICT(barcode) DO UPDATE SET name=excluded.name, price_cents=excluded.price_cents,
			stock=excluded.stock, updated_at=excluded.updated_at`,
			it.Barcode, it.Name, it.PriceCents, it.Stock, ts(it.UpdatedAt))
		return err
	})
}

// Item is the daemon's copy of an item, or nil when it never saw it.
func (j *Journal) Item(ctx context.Context, barcode string) (*Item, error) {
	var it Item
	var at string
	err := j.st.item.QueryRowContext(ctx, barcode).Scan(&it.Barcode, &it.Name, &it.PriceCents, &it.Stock, &at, &it.Active)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read item %s: %w", barcode, err)
	}
	it.UpdatedAt = parseTS(at)
	return &it, nil
}
