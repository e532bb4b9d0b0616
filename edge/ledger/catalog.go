package ledger

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/posedge/posedge/lua"
	"github.com/posedge/posedge/offline/journal"
)

// CatalogChange is one entry of HQ's item master as the store applies
// it (contract §6): name, price and active, never stock.
type CatalogChange struct {
	Barcode    string
	Name       string
	PriceCents int64
	Active     bool
	Revision   uint64 // the catalog key's revision
	StoreKey   bool   // from <store_id>.<barcode>, which beats _all.<barcode>
	// Force takes the change whatever the item holds: a full reload after
	// the bucket was recreated, whose revisions restart low.
	Force bool
	// Through is the bucket revision applied through once this change is
	// done; 0 leaves it (a full reload records its end with SetCatalogMark).
	Through uint64
}

// Outcomes of ApplyCatalog.
const (
	CatalogApplied   = "applied"    // the item now shows the change
	CatalogSame      = "same"       // the item already showed this revision (a redelivery)
	CatalogStoreWins = "store_wins" // an _all change under a store entry: kept
	CatalogStale     = "stale"      // older than what the item holds: kept
)

var catalogScript = lua.MustScript("catalog_apply.lua")

// ApplyCatalog applies a catalog change to Redis (catalog_apply.lua, by
// the precedence and revision rules), then to the daemon's item copy
// with the revision applied through, in one journal transaction. Both
// steps are idempotent by revision, so a change redelivered after a
// crash between them completes the copy. Redis unreachable is an error:
// the caller applies the change again later.
func (l *Ledger) ApplyCatalog(ctx context.Context, c CatalogChange) (string, error) {
	if !ValidBarcode(c.Barcode) {
		return "", fmt.Errorf("catalog change: barcode %q is not one the terminals can use", c.Barcode)
	}
	active, src, force := "0", "all", "0"
	if c.Active {
		active = "1"
	}
	if c.StoreKey {
		src = "store"
	}
	if c.Force {
		force = "1"
	}
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	res, err := catalogScript.Run(rctx, l.rdb, []string{l.k.item(c.Barcode)}, c.Name,
		strconv.FormatInt(c.PriceCents, 10), active, strconv.FormatUint(c.Revision, 10), src, force).StringSlice()
	if err != nil {
		if outage(ctx, err) {
			l.SetRedisDown(true)
		}
		return "", fmt.Errorf("apply catalog change of %s in redis: %w", c.Barcode, err)
	}
	outcome := res[1]
	var copy *journal.CatalogItem
	var stock int64
	if res[0] == CatalogApplied || res[0] == CatalogSame {
		outcome = res[0]
		stock, _ = strconv.ParseInt(res[1], 10, 64)
		copy = &journal.CatalogItem{Barcode: c.Barcode, Name: c.Name, PriceCents: c.PriceCents, Active: c.Active,
			Revision: c.Revision, Source: src}
	}
	if err := l.j.ApplyCatalog(ctx, copy, stock, c.Through, l.now()); err != nil {
		return "", fmt.Errorf("journal catalog change of %s: %w", c.Barcode, err)
	}
	return outcome, nil
}

// SetCatalogMark records that the catalog of bucket bucketID is applied
// through rev: the end of a full reload, or entries that change no item.
func (l *Ledger) SetCatalogMark(ctx context.Context, rev uint64, bucketID string) error {
	return l.j.SetCatalogMark(ctx, rev, bucketID, l.now())
}

// CatalogMark is the revision and bucket the catalog was last applied
// through, and when.
func (l *Ledger) CatalogMark(ctx context.Context) (rev uint64, bucketID string, at time.Time, err error) {
	return l.j.CatalogMark(ctx)
}

// ReapplyCatalog applies again the catalog entries the journal recorded
// since a time, by the same rules: a Redis that lost its latest writes
// gets back the changes it lacks, one that has them keeps them (same
// revision, or a local override made since).
func (l *Ledger) ReapplyCatalog(ctx context.Context, since time.Time) (int, error) {
	items, err := l.j.CatalogSince(ctx, since)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, it := range items {
		active := "0"
		if it.Active {
			active = "1"
		}
		rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
		res, err := catalogScript.Run(rctx, l.rdb, []string{l.k.item(it.Barcode)}, it.Name, strconv.FormatInt(it.PriceCents, 10),
			active, strconv.FormatUint(it.Revision, 10), it.Source, "0").StringSlice()
		cancel()
		if err != nil {
			return n, fmt.Errorf("re-apply catalog entry of %s: %w", it.Barcode, err)
		}
		if res[0] == CatalogApplied {
			n++
		}
	}
	return n, nil
}
