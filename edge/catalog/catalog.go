package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/cents"
	"github.com/posedge/posedge/internal/natsurl"
	"github.com/posedge/posedge/internal/strictjson"
	"github.com/posedge/posedge/sync/wire"
)

// AllStores is the key prefix of the entries meant for every store.
const AllStores = "_all"

// MaxName bounds an item name, as the store's admin API does.
const MaxName = 128

// Config of a watcher.
type Config struct {
	StoreID   string
	NATSURL   string
	CredsFile string
	CAFile    string
	CertFile  string
	KeyFile   string
	Bucket    string        // hq.catalog_bucket
	Retry     time.Duration // longest wait between attempts to set the watch up; default 30s
	Reconnect time.Duration // the NATS client's wait between reconnects; default 2s
}

// Ledger is what the watcher applies changes through: the ledger owns the
// item keys and the daemon's copy.
type Ledger interface {
	ApplyCatalog(ctx context.Context, c ledger.CatalogChange) (string, error)
	SetCatalogMark(ctx context.Context, rev uint64, bucketID string) error
	CatalogMark(ctx context.Context) (rev uint64, bucketID string, at time.Time, err error)
}

// State is where the watch stands, for status.
type State struct {
	Revision  uint64     // bucket revision applied through
	AppliedAt *time.Time // when the last change was applied; nil: never
	Watching  bool       // the watch is set up and connected
	DownSince time.Time  // when the watch last stopped (or the watcher started), while !Watching
	Reloads   int        // full reloads this process did
}

// Watcher keeps the store's items in line with HQ's catalog. Create it
// with New and call Run.
type Watcher struct {
	cfg Config
	l   Ledger
	log *slog.Logger
	m   *metrics

	restart chan struct{} // the NATS connection came back: set the watch up again

	mu    sync.Mutex
	state State
}

// New returns a watcher applying cfg's bucket through l.
func New(cfg Config, l Ledger, log *slog.Logger, reg prometheus.Registerer) *Watcher {
	if cfg.Retry <= 0 {
		cfg.Retry = 30 * time.Second
	}
	if cfg.Reconnect <= 0 {
		cfg.Reconnect = 2 * time.Second
	}
	return &Watcher{cfg: cfg, l: l, log: log.With("catalog_bucket", cfg.Bucket), m: newMetrics(reg),
		restart: make(chan struct{}, 1), state: State{DownSince: time.Now()}}
}

// State is a copy of where the watch stands.
func (w *Watcher) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.state
	if s.AppliedAt != nil {
		at := *s.AppliedAt
		s.AppliedAt = &at
	}
	return s
}

func (w *Watcher) setWatching(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state.Watching && !on {
		w.state.DownSince = time.Now()
	}
	w.state.Watching = on
	if on {
		w.m.watching.Set(1)
	} else {
		w.m.watching.Set(0)
	}
}

func (w *Watcher) setApplied(rev uint64, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state.Revision = rev
	if !at.IsZero() {
		w.state.AppliedAt = &at
	}
	w.m.revision.Set(float64(rev))
}

// Run watches until ctx ends. Every failure (HQ unreachable, the bucket
// not there yet, Redis refusing a change) is logged and retried: the
// watch is set up again from the last revision the journal holds.
func (w *Watcher) Run(ctx context.Context) error {
	if rev, _, at, err := w.l.CatalogMark(ctx); err == nil {
		w.setApplied(rev, at)
	}
	nc, err := w.connect()
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("catalog: jetstream: %w", err)
	}
	wait := time.Second
	for ctx.Err() == nil {
		sctx, cancel := context.WithCancel(ctx)
		// A reconnect sets the watch up again from the journal's mark:
		// whatever happened to the consumer meanwhile, nothing is skipped.
		go func() {
			select {
			case <-w.restart:
				cancel()
			case <-sctx.Done():
			}
		}()
		caughtUp, err := w.session(sctx, js)
		cancel()
		w.setWatching(false)
		if ctx.Err() != nil {
			break
		}
		if caughtUp {
			wait = time.Second
		}
		if err != nil {
			w.log.Warn("catalog watch stopped; prices stay as applied until it is back", "err", err, "retry_in", wait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait + rand.N(wait/4+1)):
		case <-w.restart:
		}
		wait = min(2*wait, w.cfg.Retry)
	}
	return nil
}

func (w *Watcher) connect() (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("posedge " + w.cfg.StoreID + " catalog"),
		// The JetStream API's answers and the watch's deliveries come to
		// _INBOX.<store>.…, as the replay's do: the per-store NATS user
		// of docs/security.md may read that prefix only.
		nats.CustomInboxPrefix(wire.InboxPrefix(w.cfg.StoreID)),
		nats.Timeout(5 * time.Second),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(w.cfg.Reconnect),
		nats.ReconnectJitter(w.cfg.Reconnect/4, w.cfg.Reconnect/4),
		nats.PingInterval(20 * time.Second),
		nats.MaxPingsOutstanding(3),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				w.setWatching(false)
				w.log.Warn("catalog: disconnected from HQ", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) {
			select {
			case w.restart <- struct{}{}:
			default:
			}
		}),
	}
	if w.cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(w.cfg.CredsFile))
	}
	if w.cfg.CAFile != "" {
		opts = append(opts, nats.RootCAs(w.cfg.CAFile))
	}
	if w.cfg.CertFile != "" {
		opts = append(opts, nats.ClientCert(w.cfg.CertFile, w.cfg.KeyFile))
	}
	nc, err := nats.Connect(w.cfg.NATSURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("catalog: connect to HQ at %s: %w", natsurl.Redact(w.cfg.NATSURL), err)
	}
	return nc, nil
}

// session sets the watch up — a resume from the journal's mark, or a
// full reload when the bucket is not the one the mark counts in — and
// applies changes until the watch fails. caughtUp tells that it got as
// far as the newest revision.
func (w *Watcher) session(ctx context.Context, js jetstream.JetStream) (caughtUp bool, err error) {
	kv, err := js.KeyValue(ctx, w.cfg.Bucket)
	if err != nil {
		return false, fmt.Errorf("open catalog bucket: %w", err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return false, fmt.Errorf("catalog bucket status: %w", err)
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	bucketID := info.Created.UTC().Format(time.RFC3339Nano)
	mark, markID, _, err := w.l.CatalogMark(ctx)
	if err != nil {
		return false, err
	}
	filters := []string{w.cfg.StoreID + ".>", AllStores + ".>"}

	if reason := reloadReason(mark, markID, bucketID, info.State.LastSeq); reason != "" {
		return w.reload(ctx, kv, filters, bucketID, reason)
	}
	watch, err := kv.WatchFiltered(ctx, filters, jetstream.IncludeHistory(), jetstream.ResumeFromRevision(mark+1))
	if err != nil {
		return false, fmt.Errorf("watch the catalog from revision %d: %w", mark+1, err)
	}
	defer watch.Stop()
	w.setWatching(true)
	w.log.Info("catalog watch resumed", "from_revision", mark+1, "newest_revision", info.State.LastSeq)
	return w.follow(ctx, watch, bucketID, false)
}

// reloadReason says why the journal's mark cannot be resumed from, or "".
func reloadReason(mark uint64, markID, bucketID string, lastSeq uint64) string {
	switch {
	case markID == "":
		return "no catalog applied yet"
	case markID != bucketID:
		return "the bucket was recreated since the last change applied"
	case mark > lastSeq:
		return "the bucket was purged past the last change applied"
	}
	return ""
}

// reload applies every current entry, the store's over _all, whatever
// revision the items hold, records the mark and then follows the watch.
func (w *Watcher) reload(ctx context.Context, kv jetstream.KeyValue, filters []string, bucketID, reason string) (bool, error) {
	start := time.Now()
	w.log.Warn("catalog: full reload", "reason", reason)
	watch, err := kv.WatchFiltered(ctx, filters)
	if err != nil {
		return false, fmt.Errorf("watch the catalog for a full reload: %w", err)
	}
	defer watch.Stop()
	w.setWatching(true)
	best := map[string]ledger.CatalogChange{}
	var through uint64
	for {
		e, err := next(ctx, watch)
		if err != nil {
			return false, err
		}
		if e == nil {
			break
		}
		through = max(through, e.Revision())
		c, ok := w.change(e)
		if !ok {
			continue
		}
		if old, seen := best[c.Barcode]; !seen || c.StoreKey || !old.StoreKey {
			best[c.Barcode] = c
		}
	}
	for _, c := range best {
		c.Force, c.Through = true, 0
		out, err := w.l.ApplyCatalog(ctx, c)
		if err != nil {
			return false, fmt.Errorf("full reload: %w", err)
		}
		w.m.changes.WithLabelValues(out).Inc()
	}
	if err := w.l.SetCatalogMark(ctx, through, bucketID); err != nil {
		return false, fmt.Errorf("full reload: record the revision: %w", err)
	}
	w.setApplied(through, time.Now())
	w.mu.Lock()
	w.state.Reloads++
	w.mu.Unlock()
	w.m.reloads.Inc()
	w.m.lag.Set(0)
	w.log.Warn("catalog: full reload done", "items", len(best), "revision", through, "took", time.Since(start).Round(time.Millisecond))
	return w.follow(ctx, watch, bucketID, true)
}

// follow applies the watch's changes in revision order until it fails.
func (w *Watcher) follow(ctx context.Context, watch jetstream.KeyWatcher, bucketID string, caughtUp bool) (bool, error) {
	for {
		e, err := next(ctx, watch)
		if err != nil {
			return caughtUp, err
		}
		if e == nil {
			caughtUp = true
			w.m.lag.Set(0)
			w.log.Info("catalog caught up", "revision", w.State().Revision)
			continue
		}
		rev := e.Revision()
		c, ok := w.change(e)
		if !ok {
			if err := w.l.SetCatalogMark(ctx, rev, bucketID); err != nil {
				return caughtUp, err
			}
			w.setApplied(rev, time.Time{})
			continue
		}
		c.Through = rev
		out, err := w.l.ApplyCatalog(ctx, c)
		if err != nil {
			return caughtUp, err
		}
		w.m.changes.WithLabelValues(out).Inc()
		w.m.lag.Set(float64(e.Delta()))
		if e.Delta() == 0 {
			caughtUp = true
		}
		w.setApplied(rev, time.Now())
		w.log.Debug("catalog change", "key", e.Key(), "revision", rev, "outcome", out)
	}
}

func next(ctx context.Context, watch jetstream.KeyWatcher) (jetstream.KeyValueEntry, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case e, ok := <-watch.Updates():
		if !ok {
			return nil, errors.New("the catalog watch ended")
		}
		return e, nil
	}
}

// entry is a catalog value as HQ writes it.
type entry struct {
	Name       *string `json:"name"`
	PriceCents *int64  `json:"price_cents"`
	Active     *bool   `json:"active"`
}

// entryFields are the keys of a catalog value.
var entryFields = strictjson.FieldsOf(entry{})

// decodeEntry reads a catalog value as strictly as the store's own API
// reads a body: a duplicate key, a key in another case, an unknown key or
// data after the object would let two readers (this store, HQ's tools)
// see two different items, so each refuses the value.
func decodeEntry(value []byte) (entry, error) {
	var v entry
	if err := strictjson.Check(value, entryFields); err != nil {
		return v, err
	}
	d := json.NewDecoder(bytes.NewReader(value))
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil {
		return v, err
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return v, errors.New("data after the object")
	}
	switch {
	case v.Name == nil || *v.Name == "" || len(*v.Name) > MaxName:
		return v, errors.New("name missing or too long")
	case v.PriceCents == nil || *v.PriceCents < 0 || *v.PriceCents > cents.MaxItemPrice:
		return v, errors.New("price_cents missing or out of range")
	case v.Active == nil:
		return v, errors.New("active missing")
	}
	return v, nil
}

// change reads an entry of this store or _all; ok is false (and the
// entry logged and counted) for a deletion or a value no till could use.
func (w *Watcher) change(e jetstream.KeyValueEntry) (ledger.CatalogChange, bool) {
	scope, barcode, _ := strings.Cut(e.Key(), ".")
	if e.Operation() != jetstream.KeyValuePut {
		// HQ deactivates with "active": false; a deleted key changes nothing.
		w.m.changes.WithLabelValues("deleted").Inc()
		w.log.Info("catalog key deleted at HQ; the item keeps what it has", "key", e.Key(), "revision", e.Revision())
		return ledger.CatalogChange{}, false
	}
	v, err := decodeEntry(e.Value())
	if err == nil && !ledger.ValidBarcode(barcode) {
		err = errors.New("barcode outside [A-Za-z0-9._-]{1,64}")
	}
	if err != nil {
		w.m.changes.WithLabelValues("invalid").Inc()
		w.log.Warn("catalog entry ignored: not a valid item", "key", e.Key(), "revision", e.Revision(), "err", err)
		return ledger.CatalogChange{}, false
	}
	return ledger.CatalogChange{Barcode: barcode, Name: *v.Name, PriceCents: *v.PriceCents, Active: *v.Active,
		Revision: e.Revision(), StoreKey: scope == w.cfg.StoreID}, true
}
