package hq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/sync/wire"
)

// The item master (contract §6) lives in a JetStream key-value bucket:
// key "<store_id>.<barcode>" for one store, "_all.<barcode>" for every
// store, the key's revision its version. HQ only writes it; each store
// watches its own keys and _all.

// AllStores is the key prefix of an entry meant for every store.
const AllStores = "_all"

// MaxItemName bounds an item's name, as the stores' admin API does.
const MaxItemName = 128

var barcodePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ErrCatalogKeyNotFound: the bucket holds no entry under that key.
var ErrCatalogKeyNotFound = errors.New("catalog key not found")

// CatalogItem is the value of one catalog key, byte for byte what a
// store reads.
type CatalogItem struct {
	Name       string `json:"name"`
	PriceCents int64  `json:"price_cents"`
	Active     bool   `json:"active"`
}

// CatalogKey is the key of barcode for storeID; "" is every store.
func CatalogKey(storeID, barcode string) string {
	if storeID == "" {
		storeID = AllStores
	}
	return storeID + "." + barcode
}

// CatalogFieldError is a catalog entry refused: Code is the contract's
// error code, Message says which field and why.
type CatalogFieldError struct {
	Code    string
	Message string
}

func (e *CatalogFieldError) Error() string { return e.Message }

// ValidateCatalogEntry checks a barcode, an optional store and a value
// as the terminal API checks them, maxCents being max_sale_cents.
func ValidateCatalogEntry(storeID, barcode string, it CatalogItem, maxCents int64) *CatalogFieldError {
	switch {
	case !barcodePattern.MatchString(barcode):
		return &CatalogFieldError{"invalid_barcode", "barcode must be 1-64 of [A-Za-z0-9._-]"}
	case storeID != "" && (!validStoreID(storeID) || storeID == AllStores):
		return &CatalogFieldError{"invalid_store_id", "store_id must be 1-32 of [A-Za-z0-9_-] and not " + AllStores}
	case it.Name == "" || len(it.Name) > MaxItemName:
		return &CatalogFieldError{"invalid_name", fmt.Sprintf("name is required, at most %d bytes", MaxItemName)}
	case it.PriceCents < 0 || it.PriceCents > maxCents:
		return &CatalogFieldError{"invalid_amount", fmt.Sprintf("price_cents must be a whole number of cents from 0 to max_sale_cents (%d)", maxCents)}
	}
	return nil
}

// Catalog writes the item master bucket. The bucket is created (or its
// settings brought in line) on first use, so posedge-hq starts while
// NATS is unreachable.
type Catalog struct {
	cfg Config
	js  jetstream.JetStream

	mu sync.Mutex
	kv jetstream.KeyValue
}

// NewCatalog returns the catalog of cfg's bucket on js.
func NewCatalog(cfg Config, js jetstream.JetStream) *Catalog {
	return &Catalog{cfg: cfg, js: js}
}

// catalogReplicas is how many copies the bucket keeps: as many as the
// transaction stream (stream_replicas), so the item master survives what
// the transactions survive; at least one.
func (c Config) catalogReplicas() int { return max(1, c.StreamReplicas) }

// Bucket opens (creating if needed) the key-value bucket.
func (c *Catalog) Bucket(ctx context.Context) (jetstream.KeyValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kv != nil {
		return c.kv, nil
	}
	kv, err := c.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      c.cfg.CatalogBucket,
		Description: "posedge item master: <store_id>.<barcode> and _all.<barcode>",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    c.cfg.catalogReplicas(),
		// Each change is republished for the stores, which read the
		// bucket without JetStream consumers (docs/security.md, the
		// catalog under two accounts): posedge.catalog.<bucket>.<key>.
		RePublish: &jetstream.RePublish{Source: "$KV." + c.cfg.CatalogBucket + ".>",
			Destination: wire.CatalogLiveSubject(c.cfg.CatalogBucket) + ".>"},
	})
	if err != nil {
		return nil, fmt.Errorf("open catalog bucket %s: %w", c.cfg.CatalogBucket, err)
	}
	c.kv = kv
	return kv, nil
}

// Ensure creates the bucket as soon as JetStream allows (a cluster may
// have no meta leader yet), so stores can watch it before HQ's first
// price change rather than retrying "bucket not found" until then.
func (c *Catalog) Ensure(ctx context.Context, log *slog.Logger) {
	wait := time.Second
	for {
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := c.Bucket(bctx)
		cancel()
		if err == nil {
			log.Info("catalog bucket ready", "catalog_bucket", c.cfg.CatalogBucket, "replicas", c.cfg.catalogReplicas())
			return
		}
		log.Warn("catalog bucket not ready; retrying", "catalog_bucket", c.cfg.CatalogBucket, "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// Put writes one entry and returns its key and new revision.
func (c *Catalog) Put(ctx context.Context, storeID, barcode string, it CatalogItem) (string, uint64, error) {
	kv, err := c.Bucket(ctx)
	if err != nil {
		return "", 0, err
	}
	key := CatalogKey(storeID, barcode)
	b, err := json.Marshal(it)
	if err != nil {
		return "", 0, fmt.Errorf("encode catalog entry %s: %w", key, err)
	}
	rev, err := kv.Put(ctx, key, b)
	if err != nil {
		return "", 0, fmt.Errorf("write catalog entry %s: %w", key, err)
	}
	return key, rev, nil
}

// Deactivate writes "active": false into an existing entry, keeping its
// name and price; ErrCatalogKeyNotFound when there is none.
func (c *Catalog) Deactivate(ctx context.Context, storeID, barcode string) (string, uint64, error) {
	kv, err := c.Bucket(ctx)
	if err != nil {
		return "", 0, err
	}
	key := CatalogKey(storeID, barcode)
	// Update against the revision read, so a PUT racing the DELETE is
	// never overwritten with the name and price read before it.
	for attempt := 0; ; attempt++ {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return key, 0, ErrCatalogKeyNotFound
		}
		if err != nil {
			return key, 0, fmt.Errorf("read catalog entry %s: %w", key, err)
		}
		var it CatalogItem
		if err := json.Unmarshal(e.Value(), &it); err != nil {
			return key, 0, fmt.Errorf("catalog entry %s holds no item: %w", key, err)
		}
		it.Active = false
		b, _ := json.Marshal(it)
		rev, err := kv.Update(ctx, key, b, e.Revision())
		if err == nil {
			return key, rev, nil
		}
		if attempt >= 5 || !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return key, 0, fmt.Errorf("write catalog entry %s: %w", key, err)
		}
	}
}

// Entries reads every current entry of the bucket: key → item. Keys
// whose value is not an item (deleted, foreign) are left out.
func (c *Catalog) Entries(ctx context.Context) (map[string]CatalogItem, uint64, error) {
	kv, err := c.Bucket(ctx)
	if err != nil {
		return nil, 0, err
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, 0, fmt.Errorf("read catalog bucket %s: %w", c.cfg.CatalogBucket, err)
	}
	defer w.Stop()
	out := map[string]CatalogItem{}
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, 0, errors.New("read catalog bucket: the watch ended early")
			}
			if e == nil { // every current value delivered
				return out, last, nil
			}
			last = max(last, e.Revision())
			var it CatalogItem
			if json.Unmarshal(e.Value(), &it) == nil {
				out[e.Key()] = it
			}
		}
	}
}

// ImportProgress is where an import stands.
type ImportProgress struct {
	Rows      int // rows looked at
	Total     int
	Written   int // keys given a new revision
	Unchanged int // rows equal to the bucket's value, skipped
}

// ImportSummary is the outcome of a whole import.
type ImportSummary struct {
	ImportProgress
	LastRevision uint64
	Took         time.Duration
}

// Import writes rows, already validated, into the bucket: one revision
// per changed key, rows equal to the current value skipped. progress,
// if set, is called about once a second and at the end.
func (c *Catalog) Import(ctx context.Context, rows []CatalogRow, progress func(ImportProgress)) (ImportSummary, error) {
	start := time.Now()
	cur, _, err := c.Entries(ctx)
	if err != nil {
		return ImportSummary{}, err
	}
	var s ImportSummary
	s.Total = len(rows)
	last := time.Now()
	for _, r := range rows {
		key := CatalogKey(r.StoreID, r.Barcode)
		if old, ok := cur[key]; ok && old == r.Item {
			s.Unchanged++
		} else {
			_, rev, err := c.Put(ctx, r.StoreID, r.Barcode, r.Item)
			if err != nil {
				return s, fmt.Errorf("line %d: %w (%d rows written before it)", r.Line, err, s.Written)
			}
			s.Written++
			s.LastRevision = rev
		}
		s.Rows++
		if progress != nil && time.Since(last) >= time.Second {
			last = time.Now()
			progress(s.ImportProgress)
		}
	}
	if progress != nil {
		progress(s.ImportProgress)
	}
	s.Took = time.Since(start)
	return s, nil
}
