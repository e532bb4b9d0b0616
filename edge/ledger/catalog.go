package ledger

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/posedge/posedge/edge/redisdb"
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
	// CatalogDeferred: Redis lacks an item the store knew (it lost
	// writes): the daemon's copy took the change and the repair restores
	// the item whole, stock included, rather than making it with stock 0.
	CatalogDeferred = "deferred"
)

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
	src := "all"
	if c.StoreKey {
		src = "store"
	}
	l.catalogMu.Lock()
	defer l.catalogMu.Unlock()
	known, err := l.j.Item(ctx, c.Barcode)
	if err != nil {
		return "", fmt.Errorf("apply catalog change of %s: %w", c.Barcode, err)
	}
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	res, err := redisdb.RunCatalogApply(rctx, l.rdb, l.k, redisdb.CatalogApply{Barcode: c.Barcode, Name: c.Name,
		PriceCents: c.PriceCents, Active: c.Active, Revision: c.Revision, StoreKey: c.StoreKey, Force: c.Force, Create: known == nil}).StringSlice()
	if err != nil {
		if outage(ctx, err) {
			l.SetRedisDown(true)
		}
		return "", fmt.Errorf("apply catalog change of %s in redis: %w", c.Barcode, err)
	}
	outcome := res[1]
	var copy *journal.CatalogItem
	var stock int64
	switch {
	case res[0] == CatalogApplied || res[0] == CatalogSame:
		outcome = res[0]
		stock, _ = strconv.ParseInt(res[1], 10, 64)
	case outcome == "missing":
		// The daemon's copy takes the change as the precedence rules
		// would have; the repair brings the item back from it.
		outcome = l.catalogOutcome(ctx, c, src)
		l.repairWanted.Store(true)
		l.log.Warn("redis lacks an item the journal knows (it lost writes): the repair restores it", "barcode", c.Barcode)
	}
	if outcome == CatalogApplied || outcome == CatalogSame || outcome == CatalogDeferred {
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

// catalogOutcome is what catalog_apply.lua would answer for change c of
// source src over the entry the daemon's copy holds for its barcode:
// CatalogDeferred when the change wins (the copy takes it), else the
// reason it does not.
func (l *Ledger) catalogOutcome(ctx context.Context, c CatalogChange, src string) string {
	cur, err := l.j.CatalogEntry(ctx, c.Barcode)
	switch {
	case err != nil || cur == nil || c.Force:
		return CatalogDeferred
	case src == "all" && cur.Source == "store":
		return CatalogStoreWins
	case src == cur.Source && c.Revision == cur.Revision:
		return CatalogSame
	case src == cur.Source && c.Revision < cur.Revision:
		return CatalogStale
	}
	return CatalogDeferred
}

// restoreChunk is how many items one item_restore.lua call handles.
const restoreChunk = 500

// RestoreItems brings back what Redis lost of the item master, from the
// journal: every catalog entry the daemon applied is applied again to the
// items Redis holds, by the catalog's rules (what Redis lacks comes back;
// what it has, or a local override made since, stays), and every item
// Redis lacks is made again whole — name and price, HQ's active flag and
// revision, and the stock the journal expects (set, minus sales, plus
// refunds and adjustments since). Run after the journaled transactions are
// applied again (ReapplyRecent, ApplyDegraded): those skip the stock of
// items Redis lacks and the journal's expectation counts them, so an item
// made here is right at once, never at stock 0 first. It returns how many
// catalog entries it applied again and how many items it made.
func (l *Ledger) RestoreItems(ctx context.Context) (applied, created int, err error) {
	l.catalogMu.Lock()
	defer l.catalogMu.Unlock()
	barcodes, err := l.j.ItemBarcodes(ctx)
	if err != nil {
		return 0, 0, err
	}
	entries, err := l.j.CatalogItems(ctx)
	if err != nil {
		return 0, 0, err
	}
	cat := make(map[string]journal.CatalogItem, len(entries))
	for _, e := range entries {
		cat[e.Barcode] = e
	}
	var missing []string
	for i := 0; i < len(barcodes); i += restoreChunk {
		chunk := barcodes[i:min(i+restoreChunk, len(barcodes))]
		entries := make([]redisdb.CatalogEntry, len(chunk))
		for n, b := range chunk {
			e, ok := cat[b]
			entries[n] = redisdb.CatalogEntry{Barcode: b, Name: e.Name, PriceCents: e.PriceCents, Active: e.Active,
				Revision: e.Revision, Source: e.Source, Known: ok}
		}
		rctx, cancel := context.WithTimeout(ctx, bulkTimeout)
		res, err := redisdb.RunRestoreCatalog(rctx, l.rdb, l.k, entries).Int64Slice()
		cancel()
		if err != nil {
			return applied, 0, fmt.Errorf("apply the journal's catalog entries again: %w", err)
		}
		applied += int(res[0])
		for _, idx := range res[1:] {
			missing = append(missing, chunk[idx-1])
		}
	}
	if len(missing) == 0 {
		return applied, 0, nil
	}
	items, err := l.j.ExpectedStock(ctx, math.MaxInt64)
	if err != nil {
		return applied, 0, fmt.Errorf("restore items redis lost: %w", err)
	}
	want := make(map[string]journal.ItemStock, len(items))
	for _, it := range items {
		want[it.Barcode] = it
	}
	for i := 0; i < len(missing); i += restoreChunk {
		lost := make([]redisdb.LostItem, 0, restoreChunk)
		for _, b := range missing[i:min(i+restoreChunk, len(missing))] {
			it, ok := want[b]
			if !ok {
				continue // deleted meanwhile
			}
			lost = append(lost, redisdb.LostItem{Barcode: b, Name: it.Name, PriceCents: it.PriceCents, Stock: it.Expected,
				Active: it.Active, Revision: it.Revision, Source: it.Source})
		}
		if len(lost) == 0 {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, bulkTimeout)
		res, err := redisdb.RunRestoreCreate(rctx, l.rdb, l.k, lost).Int64Slice()
		cancel()
		if err != nil {
			return applied, created, fmt.Errorf("restore items redis lost: %w", err)
		}
		created += int(res[0])
	}
	return applied, created, nil
}
