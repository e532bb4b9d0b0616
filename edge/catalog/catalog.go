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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/cents"
	"github.com/posedge/posedge/internal/strictjson"
	"github.com/posedge/posedge/sync/wire"
)

// AllStores is the key prefix of the entries meant for every store.
const AllStores = "_all"

// MaxName bounds an item name, as the store's admin API does.
const MaxName = 128

// Config of a watcher.
type Config struct {
	StoreID string
	Bucket  string        // hq.catalog_bucket
	Retry   time.Duration // longest wait between attempts to set the watch up; default 30s
	// Poll is how often the watcher reads the bucket from its mark even
	// when no change was republished (a change lost on the way, a bucket
	// without RePublish); default 1m.
	Poll time.Duration
	// Timeout bounds each read of the bucket; default 10s.
	Timeout time.Duration
}

// Link is the store's connection to HQ (hqlink.Link, dialed by the
// replay): Conn waits for it and returns a channel closed when it drops
// or comes back.
type Link interface {
	Conn(ctx context.Context) (*nats.Conn, <-chan struct{}, error)
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
//
// It reads the bucket without a JetStream consumer, so that a store needs
// no JetStream API that could be aimed at HQ's subjects (docs/security.md):
// the bucket's changes arrive as JetStream republishes them
// (wire.CatalogLiveSubject, this store's keys and _all only), and it
// catches up from the journal's mark with batched direct gets (read-only
// requests, answered on the store's inbox) — at start, after each
// reconnect, when a republished change shows one was missed, and every
// Poll.
type Watcher struct {
	cfg  Config
	link Link
	l    Ledger
	log  *slog.Logger
	m    *metrics

	mu    sync.Mutex
	state State
	// imported: the store's account has no JetStream (the two-account
	// template), so the bucket's stream info and direct gets are asked
	// on the subjects the account imports them under.
	imported bool
}

// New returns a watcher applying cfg's bucket, read over link, through l.
func New(cfg Config, link Link, l Ledger, log *slog.Logger, reg prometheus.Registerer) *Watcher {
	if cfg.Retry <= 0 {
		cfg.Retry = 30 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Minute
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Watcher{cfg: cfg, link: link, l: l, log: log.With("catalog_bucket", cfg.Bucket), m: newMetrics(reg),
		state: State{DownSince: time.Now()}}
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
	wait := time.Second
	for ctx.Err() == nil {
		nc, changed, err := w.link.Conn(ctx)
		if err != nil {
			break
		}
		sctx, cancel := context.WithCancel(ctx)
		// A dropped or returned connection sets the watch up again from
		// the journal's mark: whatever was republished meanwhile was
		// lost, nothing is skipped.
		go func() {
			select {
			case <-changed:
				cancel()
			case <-sctx.Done():
			}
		}()
		caughtUp, err := w.session(sctx, nc)
		cancel()
		w.setWatching(false)
		if ctx.Err() != nil {
			break
		}
		if caughtUp {
			wait = time.Second
		}
		select {
		case <-changed:
			continue // the connection changed: no error of the watch's own
		default:
		}
		if err != nil {
			w.log.Warn("catalog watch stopped; prices stay as applied until it is back", "err", err, "retry_in", wait)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait + rand.N(wait/4+1)):
		case <-changed:
		}
		wait = min(2*wait, w.cfg.Retry)
	}
	return nil
}

// kvEntry is one message of the bucket's stream: a key's revision.
type kvEntry struct {
	key   string
	value []byte
	rev   uint64
	put   bool // false: a deletion or purge
}

// session subscribes to the republished changes, catches up from the
// journal's mark — or reloads the bucket whole when the mark is not one
// of this bucket — and then applies changes until ctx ends or a read
// fails. caughtUp tells that it got as far as the newest revision.
func (w *Watcher) session(ctx context.Context, nc *nats.Conn) (caughtUp bool, err error) {
	live := make(chan *nats.Msg, 4096)
	prefix := wire.CatalogLiveSubject(w.cfg.Bucket) + "."
	for _, scope := range []string{w.cfg.StoreID, AllStores} {
		sub, err := nc.ChanSubscribe(prefix+scope+".>", live)
		if err != nil {
			return false, fmt.Errorf("subscribe to the catalog's changes: %w", err)
		}
		defer sub.Unsubscribe() //nolint:errcheck // the connection may be gone
	}
	// The server has the interest before the catch-up reads: a change
	// stored after the read is republished to this subscription.
	if err := nc.FlushTimeout(w.cfg.Timeout); err != nil {
		return false, fmt.Errorf("subscribe to the catalog's changes: %w", err)
	}
	info, err := w.streamInfo(ctx, nc)
	if err != nil {
		return false, err
	}
	if rp := info.Config.RePublish; rp == nil || rp.Destination != prefix+">" {
		w.log.Warn("the catalog bucket republishes no changes to the stores; prices arrive at each poll only (posedge-hq sets this up)",
			"want_republish", prefix+">", "poll", w.cfg.Poll)
	}
	bucketID := info.Created.UTC().Format(time.RFC3339Nano)
	mark, markID, _, err := w.l.CatalogMark(ctx)
	if err != nil {
		return false, err
	}
	if reason := reloadReason(mark, markID, bucketID, info.State.LastSeq); reason != "" {
		if mark, err = w.reload(ctx, nc, bucketID, info.State.LastSeq, reason); err != nil {
			return false, err
		}
	} else {
		w.log.Info("catalog watch resuming", "from_revision", mark+1, "newest_revision", info.State.LastSeq)
		if mark, err = w.catchUp(ctx, nc, bucketID, mark, info.State.LastSeq); err != nil {
			return false, err
		}
	}
	w.setWatching(true)
	w.m.lag.Set(0)
	w.log.Info("catalog caught up", "revision", mark)
	caughtUp = true

	poll := time.NewTicker(w.cfg.Poll)
	defer poll.Stop()
	var gap <-chan time.Time // a missed change noticed: read from the mark soon
	for {
		select {
		case <-ctx.Done():
			return caughtUp, ctx.Err()
		case <-poll.C:
			gap = time.After(0)
		case <-gap:
			gap = nil
			info, err := w.streamInfo(ctx, nc)
			if err != nil {
				return caughtUp, err
			}
			if info.Created.UTC().Format(time.RFC3339Nano) != bucketID || info.State.LastSeq < mark {
				return caughtUp, errors.New("the catalog bucket was recreated or purged: set the watch up again")
			}
			if mark, err = w.catchUp(ctx, nc, bucketID, mark, info.State.LastSeq); err != nil {
				return caughtUp, err
			}
			w.m.lag.Set(0)
		case m := <-live:
			e, last, err := liveEntry(m, prefix)
			if err != nil {
				w.m.changes.WithLabelValues("invalid").Inc()
				w.log.Warn("republished catalog change ignored", "subject", m.Subject, "err", err)
				continue
			}
			if e.rev <= mark {
				continue // read already by a catch-up
			}
			// Nats-Last-Sequence is the bucket's revision before this one:
			// at or below the mark, nothing lies between, so the mark may
			// move to this revision. Above it, a change of the bucket came
			// in between: if it was one of this store's (lost on the way,
			// or sent while subscribing) the catch-up reads it; this change
			// is applied now all the same (an item never goes back to an
			// older revision).
			through := e.rev
			if last > mark {
				through = 0
				if gap == nil {
					gap = time.After(250 * time.Millisecond)
				}
				w.m.lag.Set(float64(e.rev - mark))
			}
			if err := w.apply(ctx, e, bucketID, through, false); err != nil {
				return caughtUp, err
			}
			if through != 0 {
				mark = through
			}
		}
	}
}

// apply hands one entry to the ledger; through (0: leave the mark) is
// the revision the journal's mark moves to with it.
func (w *Watcher) apply(ctx context.Context, e kvEntry, bucketID string, through uint64, force bool) error {
	c, ok := w.change(e)
	if !ok {
		if through == 0 {
			return nil
		}
		if err := w.l.SetCatalogMark(ctx, through, bucketID); err != nil {
			return err
		}
		w.setApplied(through, time.Time{})
		return nil
	}
	c.Through, c.Force = through, force
	out, err := w.l.ApplyCatalog(ctx, c)
	if err != nil {
		return err
	}
	w.m.changes.WithLabelValues(out).Inc()
	if through != 0 {
		w.setApplied(through, time.Now())
	}
	w.log.Debug("catalog change", "key", e.key, "revision", e.rev, "outcome", out)
	return nil
}

// catchUp applies this store's and _all's entries above mark in revision
// order and returns the new mark: at least upto, the bucket's newest
// revision read before the entries were.
func (w *Watcher) catchUp(ctx context.Context, nc *nats.Conn, bucketID string, mark, upto uint64) (uint64, error) {
	entries, err := w.read(ctx, nc, mark+1)
	if err != nil {
		return mark, err
	}
	for _, e := range entries {
		// Both scopes were read to their end, so every entry of this
		// store up to e.rev is in hand: the mark may move with each.
		if err := w.apply(ctx, e, bucketID, e.rev, false); err != nil {
			return mark, err
		}
		mark = e.rev
	}
	if upto > mark {
		if err := w.l.SetCatalogMark(ctx, upto, bucketID); err != nil {
			return mark, err
		}
		w.setApplied(upto, time.Time{})
		mark = upto
	}
	return mark, nil
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
// revision the items hold, records the mark and returns it.
func (w *Watcher) reload(ctx context.Context, nc *nats.Conn, bucketID string, upto uint64, reason string) (uint64, error) {
	start := time.Now()
	w.log.Warn("catalog: full reload", "reason", reason)
	entries, err := w.read(ctx, nc, 1)
	if err != nil {
		return 0, fmt.Errorf("full reload: %w", err)
	}
	best := map[string]ledger.CatalogChange{}
	through := upto
	for _, e := range entries {
		through = max(through, e.rev)
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
			return 0, fmt.Errorf("full reload: %w", err)
		}
		w.m.changes.WithLabelValues(out).Inc()
	}
	if err := w.l.SetCatalogMark(ctx, through, bucketID); err != nil {
		return 0, fmt.Errorf("full reload: record the revision: %w", err)
	}
	w.setApplied(through, time.Now())
	w.mu.Lock()
	w.state.Reloads++
	w.mu.Unlock()
	w.m.reloads.Inc()
	w.log.Warn("catalog: full reload done", "items", len(best), "revision", through, "took", time.Since(start).Round(time.Millisecond))
	return through, nil
}

// streamInfo is the JetStream answer about the bucket's stream (only the
// fields the watcher reads).
type streamInfo struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
	Created time.Time `json:"created"`
	Config  struct {
		RePublish *struct {
			Source      string `json:"src"`
			Destination string `json:"dest"`
		} `json:"republish"`
	} `json:"config"`
	State struct {
		LastSeq uint64 `json:"last_seq"`
	} `json:"state"`
}

// jsNotEnabledForAccount is JetStream's error code when the asking
// account has no JetStream: the stores' account of the two-account
// template, which imports the bucket's reads under other subjects.
const jsNotEnabledForAccount = 10039

// api is the subject of one of the bucket's read requests: JetStream's
// own in an account with JetStream, else the stores' import of it
// (wire.CatalogAPISubject).
func (w *Watcher) api(op string) string {
	w.mu.Lock()
	imported := w.imported
	w.mu.Unlock()
	if imported {
		return wire.CatalogAPISubject(w.cfg.Bucket, op)
	}
	switch op {
	case wire.CatalogAPIInfo:
		return "$JS.API.STREAM.INFO." + wire.CatalogStream(w.cfg.Bucket)
	default:
		return "$JS.API.DIRECT.GET." + wire.CatalogStream(w.cfg.Bucket)
	}
}

func (w *Watcher) streamInfo(ctx context.Context, nc *nats.Conn) (streamInfo, error) {
	info, err := w.streamInfoOn(ctx, nc, w.api(wire.CatalogAPIInfo))
	if info.Error != nil && info.Error.ErrCode == jsNotEnabledForAccount {
		w.mu.Lock()
		w.imported = true
		w.mu.Unlock()
		w.log.Info("the store's NATS account has no JetStream: reading the catalog through its imports",
			"info", wire.CatalogAPISubject(w.cfg.Bucket, wire.CatalogAPIInfo), "get", wire.CatalogAPISubject(w.cfg.Bucket, wire.CatalogAPIGet))
		info, err = w.streamInfoOn(ctx, nc, w.api(wire.CatalogAPIInfo))
	}
	return info, err
}

func (w *Watcher) streamInfoOn(ctx context.Context, nc *nats.Conn, subject string) (streamInfo, error) {
	var info streamInfo
	rctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	m, err := nc.RequestWithContext(rctx, subject, nil)
	if err != nil {
		return info, fmt.Errorf("catalog bucket status (%s): %w", subject, err)
	}
	if err := json.Unmarshal(m.Data, &info); err != nil {
		return info, fmt.Errorf("catalog bucket status: %w", err)
	}
	if info.Error != nil {
		return info, fmt.Errorf("catalog bucket status: %s (%d)", info.Error.Description, info.Error.ErrCode)
	}
	return info, nil
}

// readBatch is how many entries one direct get answers.
const readBatch = 256

// read returns this store's and _all's entries from revision from on,
// by rising revision, each scope read to its end.
func (w *Watcher) read(ctx context.Context, nc *nats.Conn, from uint64) ([]kvEntry, error) {
	var all []kvEntry
	for _, scope := range []string{w.cfg.StoreID, AllStores} {
		got, err := w.readScope(ctx, nc, "$KV."+w.cfg.Bucket+"."+scope+".>", from)
		if err != nil {
			return nil, err
		}
		all = append(all, got...)
	}
	slices.SortFunc(all, func(a, b kvEntry) int { return cmpU64(a.rev, b.rev) })
	return all, nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readScope pages through the entries of filter from revision from on
// with batched direct gets ($JS.API.DIRECT.GET.<stream>: read-only, and
// answered on the store's own inbox).
func (w *Watcher) readScope(ctx context.Context, nc *nats.Conn, filter string, from uint64) ([]kvEntry, error) {
	subject := w.api(wire.CatalogAPIGet)
	keyPrefix := "$KV." + w.cfg.Bucket + "."
	var out []kvEntry
	for {
		req, _ := json.Marshal(map[string]any{"seq": from, "next_by_subj": filter, "batch": readBatch})
		inbox := nc.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		if err != nil {
			return nil, fmt.Errorf("read the catalog: %w", err)
		}
		err = nc.PublishRequest(subject, inbox, req)
		more := false
		for err == nil {
			var m *nats.Msg
			m, err = sub.NextMsg(w.cfg.Timeout)
			if err != nil {
				err = fmt.Errorf("read the catalog from revision %d: %w", from, err)
				break
			}
			if st := m.Header.Get("Status"); st != "" {
				switch st {
				case "404": // nothing from here on
				case "204": // end of the batch
					pending, _ := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
					more = pending > 0
				default:
					err = fmt.Errorf("read the catalog from revision %d: %s %s", from, st, m.Header.Get("Description"))
				}
				break
			}
			rev, perr := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
			key, ok := strings.CutPrefix(m.Header.Get("Nats-Subject"), keyPrefix)
			if perr != nil || !ok || rev == 0 {
				err = fmt.Errorf("read the catalog: an answer without its subject or sequence (%q)", m.Header.Get("Nats-Subject"))
				break
			}
			out = append(out, kvEntry{key: key, value: m.Data, rev: rev, put: isPut(m.Header)})
			from = rev + 1
		}
		_ = sub.Unsubscribe()
		if err != nil {
			return nil, err
		}
		if !more {
			return out, nil
		}
	}
}

func isPut(h nats.Header) bool {
	op := h.Get("KV-Operation")
	return op == "" || op == "PUT"
}

// liveEntry reads a republished change: the key from the subject, the
// revision and the one before it from JetStream's headers.
func liveEntry(m *nats.Msg, prefix string) (kvEntry, uint64, error) {
	key, ok := strings.CutPrefix(m.Subject, prefix)
	if !ok || key == "" {
		return kvEntry{}, 0, errors.New("not a catalog key's subject")
	}
	rev, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
	if err != nil || rev == 0 {
		return kvEntry{}, 0, errors.New("no Nats-Sequence header")
	}
	last, err := strconv.ParseUint(m.Header.Get("Nats-Last-Sequence"), 10, 64)
	if err != nil {
		return kvEntry{}, 0, errors.New("no Nats-Last-Sequence header")
	}
	return kvEntry{key: key, value: m.Data, rev: rev, put: isPut(m.Header)}, last, nil
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
func (w *Watcher) change(e kvEntry) (ledger.CatalogChange, bool) {
	scope, barcode, _ := strings.Cut(e.key, ".")
	if !e.put {
		// HQ deactivates with "active": false; a deleted key changes nothing.
		w.m.changes.WithLabelValues("deleted").Inc()
		w.log.Info("catalog key deleted at HQ; the item keeps what it has", "key", e.key, "revision", e.rev)
		return ledger.CatalogChange{}, false
	}
	v, err := decodeEntry(e.value)
	if err == nil && !ledger.ValidBarcode(barcode) {
		err = errors.New("barcode outside [A-Za-z0-9._-]{1,64}")
	}
	if err != nil {
		w.m.changes.WithLabelValues("invalid").Inc()
		w.log.Warn("catalog entry ignored: not a valid item", "key", e.key, "revision", e.rev, "err", err)
		return ledger.CatalogChange{}, false
	}
	return ledger.CatalogChange{Barcode: barcode, Name: *v.Name, PriceCents: *v.PriceCents, Active: *v.Active,
		Revision: e.rev, StoreKey: scope == w.cfg.StoreID}, true
}
