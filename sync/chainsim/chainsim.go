package chainsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/replay"
	"github.com/posedge/posedge/sync/wire"
)

// Options shape a chain.
type Options struct {
	Stores      int       // default 10
	Txns        int       // transactions per store, default 500
	RefundEvery int       // every n-th transaction refunds the sale before it; default 20, <0 none
	Terminals   int       // tills per store, default 4
	Day         time.Time // the business day (UTC); default yesterday
	Dir         string    // the journals go here; required
	Log         *slog.Logger
}

func (o *Options) defaults() {
	if o.Stores <= 0 {
		o.Stores = 10
	}
	if o.Txns <= 0 {
		o.Txns = 500
	}
	if o.RefundEvery == 0 {
		o.RefundEvery = 20
	}
	if o.Terminals <= 0 {
		o.Terminals = 4
	}
	if o.Day.IsZero() {
		o.Day = time.Now().UTC().Add(-24 * time.Hour)
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Store is one simulated store: its journal and what it holds.
type Store struct {
	ID      string
	Journal *journal.Journal
	Sales   int
	Refunds int
	Day     string // YYYYMMDD

	replayer *replay.Replayer
}

// Chain is the simulated stores.
type Chain struct {
	Stores []*Store
	o      Options
}

// Build opens one journal per store and fills it with a business day of
// transactions (a sale every few seconds per till, with refunds), as the
// edge would have journaled them while HQ was away.
func Build(ctx context.Context, o Options) (*Chain, error) {
	o.defaults()
	if o.Dir == "" {
		return nil, errors.New("chainsim: Dir required")
	}
	c := &Chain{o: o, Stores: make([]*Store, o.Stores)}
	// Stores are filled eight at a time: each journal's group commit
	// waits on its own fsync, so several journals keep the disk busier.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, 8)
	for i := range o.Stores {
		id := fmt.Sprintf("C%05d", i+1)
		j, err := journal.Open(ctx, filepath.Join(o.Dir, id+".db"), journal.Options{Logger: o.Log})
		if err != nil {
			mu.Lock()
			first = errors.Join(first, fmt.Errorf("open journal of %s: %w", id, err))
			mu.Unlock()
			break
		}
		s := &Store{ID: id, Journal: j, Day: o.Day.Format("20060102")}
		c.Stores[i] = s
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := c.fill(ctx, s); err != nil {
				mu.Lock()
				first = errors.Join(first, fmt.Errorf("fill journal of %s: %w", id, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		c.Close()
		return nil, first
	}
	return c, nil
}

// fill journals the store's day, many appends at once so that they
// share the journal's group commits.
func (c *Chain) fill(ctx context.Context, s *Store) error {
	start := time.Date(c.o.Day.Year(), c.o.Day.Month(), c.o.Day.Day(), 8, 0, 0, 0, time.UTC)
	step := 12 * time.Hour / time.Duration(c.o.Txns)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, 64)
	for n := 1; n <= c.o.Txns; n++ {
		tx := c.txn(s.ID, n, start.Add(time.Duration(n)*step))
		if tx.Kind == "refund" {
			s.Refunds++
		} else {
			s.Sales++
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.Journal.Append(ctx, tx); err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// FlowNo is the flow number of a store's n-th transaction.
func FlowNo(n int) string { return fmt.Sprintf("1%012d", n) }

// txn is transaction n of a store: a one- to three-line sale, or a
// refund of the sale before it.
func (c *Chain) txn(store string, n int, at time.Time) journal.Txn {
	term := fmt.Sprintf("T%02d", n%c.o.Terminals+1)
	tender := []string{"cash", "card", "mobile"}[n%3]
	kind, orig := "sale", ""
	var lines []journal.Line
	var total int64
	if c.o.RefundEvery > 0 && n > 1 && n%c.o.RefundEvery == 0 {
		kind, orig = "refund", FlowNo(n-1)
		l := journal.Line{Barcode: fmt.Sprintf("400638133%04d", (n-1)%9973), Qty: 1, PriceCents: int64(99 + ((n-1)*7)%900)}
		lines, total = []journal.Line{l}, l.PriceCents
	} else {
		for k := 0; k <= n%3; k++ {
			l := journal.Line{Barcode: fmt.Sprintf("400638133%04d", (n+k)%9973), Qty: int64(k + 1), PriceCents: int64(99 + (n*7+k)%900)}
			lines = append(lines, l)
			total += l.Qty * l.PriceCents
		}
	}
	ts := at.Format(time.RFC3339Nano)
	key := fmt.Sprintf("%s-%s-%d", store, term, n)
	body, _ := json.Marshal(map[string]any{"flow_no": FlowNo(n), "store_id": store, "terminal_id": term, "kind": kind,
		"original_flow_no": orig, "total_cents": total, "tender": tender, "lines": lines, "receipt_no": fmt.Sprintf("R%d", n),
		"cashier_id": "C1", "created_at": ts, "occurred_at": ts})
	return journal.Txn{FlowNo: FlowNo(n), Seq: int64(n), TerminalID: term, IdemKey: key, Fingerprint: key,
		Kind: kind, OriginalFlowNo: orig, Tender: tender, TotalCents: total, BusinessDay: at.Format("20060102"),
		BusinessHour: at.Format("15"), CreatedAt: at, Lines: lines, Body: body, Mode: journal.ModeNormal, Applied: true}
}

// Txns is the number of transactions journaled by the whole chain.
func (c *Chain) Txns() int { return len(c.Stores) * c.o.Txns }

// ReplayOptions tune the stores' replay.
type ReplayOptions struct {
	NATSURL     string
	StartJitter time.Duration // each store's first connection is delayed up to this
	BatchSize   int           // default replay's
	AckTimeout  time.Duration // default replay's
	MaxBackoff  time.Duration // default 2s: a test waits for reconnects
	// SyncEvery, when set, is each store's sync policy: store i sends
	// at most one batch per SyncEvery × (1 + i mod 3), so that the
	// stores neither follow the same policy nor drain at once.
	SyncEvery time.Duration
}

// everyLimiter lets one batch through per interval: a store's sync
// budget as the replayer asks it (replay.Limiter).
type everyLimiter struct {
	every time.Duration
	mu    sync.Mutex
	next  time.Time
}

func (l *everyLimiter) WaitStoreSync(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	at := l.next
	if at.Before(now) {
		at = now
	}
	l.next = at.Add(l.every)
	l.mu.Unlock()
	t := time.NewTimer(at.Sub(now))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Replay starts every store's replayer at once and returns a function
// that stops them and reports the first error of any.
func (c *Chain) Replay(ctx context.Context, ro ReplayOptions) (stop func() error, err error) {
	if ro.MaxBackoff <= 0 {
		ro.MaxBackoff = 2 * time.Second
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(c.Stores))
	stop = func() error {
		cancel()
		wg.Wait()
		close(errs)
		var all error
		for err := range errs {
			all = errors.Join(all, err)
		}
		return all
	}
	for i, s := range c.Stores {
		var lim replay.Limiter
		if ro.SyncEvery > 0 {
			lim = &everyLimiter{every: ro.SyncEvery * time.Duration(1+i%3)}
		}
		r, err := replay.New(replay.Config{StoreID: s.ID, NATSURL: ro.NATSURL, BatchSize: ro.BatchSize,
			AckTimeout: ro.AckTimeout, MaxBackoff: ro.MaxBackoff, StartJitter: ro.StartJitter,
			HeartbeatEvery: time.Hour, Version: "chainsim", Location: time.UTC},
			s.Journal, lim, c.o.Log.With("store_id", s.ID), nil)
		if err != nil {
			_ = stop()
			return nil, fmt.Errorf("replayer of %s: %w", s.ID, err)
		}
		s.replayer = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Run(rctx); err != nil {
				errs <- fmt.Errorf("replay of %s: %w", s.ID, err)
			}
		}()
	}
	return stop, nil
}

// Backlog is the number of transactions not yet acknowledged by HQ,
// summed over the chain.
func (c *Chain) Backlog(ctx context.Context) (int64, error) {
	var n int64
	for _, s := range c.Stores {
		st, err := s.Journal.Stats(ctx)
		if err != nil {
			return 0, fmt.Errorf("stats of %s: %w", s.ID, err)
		}
		n += st.Backlog
	}
	return n, nil
}

// Quarantined is the number of transactions the stores gave up sending.
func (c *Chain) Quarantined(ctx context.Context) (int64, error) {
	var n int64
	for _, s := range c.Stores {
		st, err := s.Journal.Stats(ctx)
		if err != nil {
			return 0, fmt.Errorf("stats of %s: %w", s.ID, err)
		}
		n += st.Quarantined
	}
	return n, nil
}

// PublishManifests publishes every store's manifests of its day (the
// replayers must be running and connected).
func (c *Chain) PublishManifests(ctx context.Context) error {
	for _, s := range c.Stores {
		if s.replayer == nil {
			return fmt.Errorf("%s: not replaying", s.ID)
		}
		if err := s.replayer.PublishManifest(ctx, s.Day); err != nil {
			return fmt.Errorf("manifest of %s: %w", s.ID, err)
		}
	}
	return nil
}

// Manifests is the number of manifests (one per till and day) the
// chain publishes.
func (c *Chain) Manifests(ctx context.Context) (int, error) {
	n := 0
	for _, s := range c.Stores {
		ms, err := replay.Manifests(ctx, s.Journal, s.ID, s.Day)
		if err != nil {
			return 0, err
		}
		n += len(ms)
	}
	return n, nil
}

// Close closes the journals.
func (c *Chain) Close() {
	for _, s := range c.Stores {
		if s != nil {
			s.Journal.Close()
		}
	}
}

// checkBody is used by tests of this package: a body the edge could not
// have produced would be refused by HQ for the wrong reason.
func checkBody(body []byte) error {
	_, err := wire.ParseTxn(body)
	return err
}
