package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The daemon's copy of what HQ's catalog set (contract §6): per item
// the entry it last took, and in meta the bucket revision it has
// applied through, so a restart resumes the watch where it stopped.

// Meta keys of the catalog watch.
const (
	MetaCatalogRevision  = "catalog_revision"   // catalog bucket revision applied through
	MetaCatalogAppliedAt = "catalog_applied_at" // when the last change was applied (RFC 3339)
	MetaCatalogBucket    = "catalog_bucket_id"  // identity of the bucket the revisions count in (its creation time)
)

const catalogSchema = `
CREATE TABLE IF NOT EXISTS catalog (
	barcode     TEXT PRIMARY KEY,
	name        TEXT NOT NULL,
	price_cents INTEGER NOT NULL,
	active      INTEGER NOT NULL,
	revision    INTEGER NOT NULL,
	source      TEXT NOT NULL,
	applied_at  TEXT NOT NULL
);
`

// CatalogItem is a catalog entry as the daemon applied it.
type CatalogItem struct {
	Barcode    string
	Name       string
	PriceCents int64
	Active     bool
	Revision   uint64
	Source     string // store | all
}

// ApplyCatalog records, in one transaction, the catalog entry Redis took
// (it; nil when Redis kept what it had) into the daemon's item copy —
// name, price and active, never the stock of a known item; stock for a
// new one — and the bucket revision applied through (0: left as it is,
// during a full reload, which records its end with SetCatalogMark).
func (j *Journal) ApplyCatalog(ctx context.Context, it *CatalogItem, stock int64, through uint64, at time.Time) error {
	return j.write(ctx, func(tx *sql.Tx) error {
		if it != nil {
			// updated_at is when the stock was last set (ExpectedStock
			// counts moves from then on): a known item keeps it.
			if _, err := tx.Exec(`INSERT INTO items (barcode, name, price_cents, stock, updated_at) VALUES (?,?,?,?,?)
				ON CONFLICT(barcode) DO UPDATE SET name=excluded.name, price_cents=excluded.price_cents`,
				it.Barcode, it.Name, it.PriceCents, stock, ts(at)); err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO catalog (barcode, name, price_cents, active, revision, source, applied_at) VALUES (?,?,?,?,?,?,?)
				ON CONFLICT(barcode) DO UPDATE SET name=excluded.name, price_cents=excluded.price_cents, active=excluded.active,
				revision=excluded.revision, source=excluded.source, applied_at=excluded.applied_at`,
				it.Barcode, it.Name, it.PriceCents, it.Active, int64(it.Revision), it.Source, ts(at)); err != nil {
				return err
			}
		}
		if through == 0 {
			return nil
		}
		return setMetaTx(tx, map[string]string{MetaCatalogRevision: strconv.FormatUint(through, 10), MetaCatalogAppliedAt: ts(at)})
	})
}

// SetCatalogMark records the revision the catalog is applied through in
// the bucket identified by bucketID: the end of a full reload, or entries
// that changed no item.
func (j *Journal) SetCatalogMark(ctx context.Context, through uint64, bucketID string, at time.Time) error {
	return j.write(ctx, func(tx *sql.Tx) error {
		return setMetaTx(tx, map[string]string{MetaCatalogRevision: strconv.FormatUint(through, 10),
			MetaCatalogAppliedAt: ts(at), MetaCatalogBucket: bucketID})
	})
}

// CatalogMark is what SetCatalogMark and ApplyCatalog recorded: zeros
// when the daemon never applied a catalog.
func (j *Journal) CatalogMark(ctx context.Context) (through uint64, bucketID string, appliedAt time.Time, err error) {
	n, err := j.MetaInt(ctx, MetaCatalogRevision)
	if err != nil {
		return 0, "", time.Time{}, err
	}
	bucketID, _, err = j.Meta(ctx, MetaCatalogBucket)
	if err != nil {
		return 0, "", time.Time{}, err
	}
	at, _, err := j.Meta(ctx, MetaCatalogAppliedAt)
	if err != nil {
		return 0, "", time.Time{}, err
	}
	return uint64(n), bucketID, parseTS(at), nil
}

// CatalogEntry is the catalog entry the daemon last applied to barcode,
// or nil.
func (j *Journal) CatalogEntry(ctx context.Context, barcode string) (*CatalogItem, error) {
	if !j.catalog {
		return nil, nil
	}
	var it CatalogItem
	var rev int64
	err := j.r.QueryRowContext(ctx, `SELECT barcode, name, price_cents, active, revision, source FROM catalog WHERE barcode = ?`, barcode).
		Scan(&it.Barcode, &it.Name, &it.PriceCents, &it.Active, &rev, &it.Source)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	it.Revision = uint64(rev)
	return &it, nil
}

func setMetaTx(tx *sql.Tx, kv map[string]string) error {
	for k, v := range kv {
		if _, err := tx.Exec(`INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`, k, v); err != nil {
			return err
		}
	}
	return nil
}

// CatalogItems lists every catalog entry the daemon applied, one per
// barcode: what a Redis that lost writes is repaired from.
func (j *Journal) CatalogItems(ctx context.Context) ([]CatalogItem, error) {
	if !j.catalog {
		return nil, nil
	}
	rows, err := j.r.QueryContext(ctx, `SELECT barcode, name, price_cents, active, revision, source FROM catalog ORDER BY barcode`)
	if err != nil {
		return nil, fmt.Errorf("read catalog entries: %w", err)
	}
	defer rows.Close()
	var out []CatalogItem
	for rows.Next() {
		var it CatalogItem
		var rev int64
		if err := rows.Scan(&it.Barcode, &it.Name, &it.PriceCents, &it.Active, &rev, &it.Source); err != nil {
			return nil, fmt.Errorf("read catalog entries: %w", err)
		}
		it.Revision = uint64(rev)
		out = append(out, it)
	}
	return out, rows.Err()
}
