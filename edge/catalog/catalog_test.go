package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/catalog"
	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/hqlink"
	"github.com/posedge/posedge/sync/wire"
)

const (
	bucket   = "POS_CATALOG"
	store    = "S1"
	waitLong = 60 * time.Second // a 2-core machine shared with other test runs
)

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// hqSide is HQ's end: the bucket, written as posedge-hq writes it.
type hqSide struct {
	t    *testing.T
	nats *testenv.NATS
	kv   jetstream.KeyValue
	js   jetstream.JetStream
}

func startHQ(t *testing.T) *hqSide {
	t.Helper()
	n := testenv.StartNATS(t)
	nc, err := nats.Connect(n.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	h := &hqSide{t: t, nats: n, js: js}
	h.createBucket()
	return h
}

func (h *hqSide) createBucket() {
	h.t.Helper()
	kv, err := h.js.CreateOrUpdateKeyValue(context.Background(), bucketConfig())
	if err != nil {
		h.t.Fatal(err)
	}
	h.kv = kv
}

// bucketConfig is the bucket as posedge-hq creates it (sync/hq
// Catalog.Bucket): its changes republished for the stores.
func bucketConfig() jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{Bucket: bucket, History: 1, RePublish: &jetstream.RePublish{
		Source: "$KV." + bucket + ".>", Destination: wire.CatalogLiveSubject(bucket) + ".>"}}
}

// put writes key's value and returns its revision.
func (h *hqSide) put(key, name string, price int64, active bool) uint64 {
	h.t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "price_cents": price, "active": active})
	rev, err := h.kv.Put(context.Background(), key, b)
	if err != nil {
		h.t.Fatalf("put %s: %v", key, err)
	}
	return rev
}

// storeSide is a store's ledger over real Redis and a journal file, and
// a watcher run on it; stop and start simulate the daemon restarting.
type storeSide struct {
	t     *testing.T
	rdb   *redis.Client
	jPath string
	j     *journal.Journal
	l     *ledger.Ledger
	w     *catalog.Watcher
	reg   *prometheus.Registry
	rec   *recorder
	poll  time.Duration // catalog.Config.Poll; 0: the default
	stop  func()
}

// recorder is the store's real ledger, noting the revision of every
// change the watcher hands it, in the order it does.
type recorder struct {
	*ledger.Ledger
	mu   sync.Mutex
	revs []uint64
}

func (r *recorder) ApplyCatalog(ctx context.Context, c ledger.CatalogChange) (string, error) {
	r.mu.Lock()
	r.revs = append(r.revs, c.Revision)
	r.mu.Unlock()
	return r.Ledger.ApplyCatalog(ctx, c)
}

// since are the revisions applied from the n-th change on.
func (r *recorder) since(n int) []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]uint64(nil), r.revs[n:]...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.revs)
}

func newStore(t *testing.T) *storeSide {
	t.Helper()
	return &storeSide{t: t, rdb: testenv.StartRedisSingle(t).NodeClient(0), jPath: filepath.Join(t.TempDir(), "journal.db")}
}

func (s *storeSide) start(natsURL string) {
	s.t.Helper()
	ctx := context.Background()
	var err error
	s.j, err = journal.Open(ctx, s.jPath, journal.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	s.reg = prometheus.NewRegistry()
	s.l, err = ledger.New(ctx, ledger.Config{StoreID: store, RedisTimeout: time.Second}, s.rdb, s.j, testLogger(s.t), s.reg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.rec = &recorder{Ledger: s.l}
	link, nc, err := hqlink.Open(hqlink.Config{StoreID: store, NATSURL: natsURL}, nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		s.t.Fatal(err)
	}
	s.w = catalog.New(catalog.Config{StoreID: store, Bucket: bucket, Retry: time.Second, Poll: s.poll}, link, s.rec, testLogger(s.t), s.reg)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.w.Run(wctx) }()
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			s.t.Errorf("watcher: %v", err)
		}
		nc.Close()
		s.j.Close()
	}
	s.t.Cleanup(s.stop)
}

// item is what a till's lookup answers; nil when the item is unknown.
func (s *storeSide) item(barcode string) *ledger.Item {
	s.t.Helper()
	it, err := s.l.Item(context.Background(), barcode)
	var le *ledger.Error
	if errors.As(err, &le) && le.Code == "item_not_found" {
		return nil
	}
	if err != nil {
		s.t.Fatalf("item %s: %v", barcode, err)
	}
	return it
}

func (s *storeSide) waitPrice(barcode string, price int64) {
	s.t.Helper()
	testenv.WaitFor(s.t, waitLong, fmt.Sprintf("%s at %d", barcode, price), func() bool {
		it := s.item(barcode)
		return it != nil && it.PriceCents == price
	})
}

func (s *storeSide) waitRevision(rev uint64) {
	s.t.Helper()
	testenv.WaitFor(s.t, waitLong, fmt.Sprintf("catalog revision %d", rev), func() bool { return s.w.State().Revision >= rev })
}

// A price changed at HQ is at the till within 2 s; a store key beats
// _all; an older or replayed revision never wins; an inactive item is
// unknown to the till.
func TestWatchAppliesChanges(t *testing.T) {
	h := startHQ(t)
	s := newStore(t)
	h.put("_all.A", "Apple", 100, true)
	h.put("S2.A", "Apple for S2", 1, true) // another store's key: never applied here
	s.start(h.nats.URL())
	s.waitPrice("A", 100)
	testenv.WaitFor(t, waitLong, "watching", func() bool { return s.w.State().Watching })

	for i, price := range []int64{120, 130, 140} {
		start := time.Now()
		h.put("_all.A", "Apple", price, true)
		deadline := start.Add(2 * time.Second)
		for {
			if it := s.item("A"); it != nil && it.PriceCents == price {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("change %d: price %d not at the till 2 s after HQ wrote it", i, price)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("change %d at the till after %v", i, time.Since(start).Round(time.Millisecond))
	}

	// The store's own key wins over _all, also over a later _all change.
	h.put(store+".A", "Apple S1", 90, true)
	s.waitPrice("A", 90)
	rev := h.put("_all.A", "Apple", 150, true)
	s.waitRevision(rev)
	if it := s.item("A"); it.PriceCents != 90 || it.Name != "Apple S1" {
		t.Errorf("after an _all change under a store key: %+v, want Apple S1 at 90", it)
	}

	// Deactivated at HQ: unknown to the till; active again: back.
	rev = h.put(store+".A", "Apple S1", 90, false)
	s.waitRevision(rev)
	if it := s.item("A"); it != nil {
		t.Errorf("inactive item looked up: %+v, want item_not_found", it)
	}
	h.put(store+".A", "Apple S1", 95, true)
	s.waitPrice("A", 95)

	// Stock was never touched: an item the catalog created has stock 0.
	if it := s.item("A"); it.Stock != 0 {
		t.Errorf("stock %d, want 0", it.Stock)
	}

	// A replayed older revision (redelivered after a crash) never wins:
	// the ledger sees it as stale.
	out, err := s.l.ApplyCatalog(context.Background(), ledger.CatalogChange{Barcode: "A", Name: "Old", PriceCents: 1,
		Active: true, Revision: 1, StoreKey: true})
	if err != nil || out != ledger.CatalogStale {
		t.Errorf("replayed revision 1: %s %v, want stale", out, err)
	}
	if it := s.item("A"); it.PriceCents != 95 {
		t.Errorf("after a stale replay: %+v, want 95", it)
	}
	if s.w.State().Reloads != 1 {
		t.Errorf("reloads %d, want exactly the first start's", s.w.State().Reloads)
	}
}

// The daemon down while HQ changes a price twice: after the restart it
// shows the newest, resumed from the journal's revision, not reloaded.
func TestResumeAfterRestart(t *testing.T) {
	h := startHQ(t)
	s := newStore(t)
	first := h.put("_all.A", "Apple", 100, true)
	s.start(h.nats.URL())
	s.waitPrice("A", 100)
	// The price is in Redis before the journal's mark is written: stop
	// only once the mark is, or the restart rightly reloads.
	s.waitRevision(first)
	s.stop()

	h.put("_all.A", "Apple", 110, true)
	rev := h.put("_all.A", "Apple", 120, true)
	h.put("_all.B", "Banana", 50, true)

	s.start(h.nats.URL())
	s.waitPrice("A", 120)
	s.waitPrice("B", 50)
	s.waitRevision(rev + 1)
	if st := s.w.State(); st.Reloads != 0 {
		t.Errorf("restart reloaded the catalog (%d reloads), want a resume", st.Reloads)
	}
	if rev, _, _, _ := s.l.CatalogMark(context.Background()); rev != h.lastRev() {
		t.Errorf("journal mark %d, want the bucket's newest %d", rev, h.lastRev())
	}
}

func (h *hqSide) lastRev() uint64 {
	h.t.Helper()
	st, err := h.kv.Status(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return st.(*jetstream.KeyValueBucketStatus).StreamInfo().State.LastSeq
}

// A WAN outage while HQ makes 1,000 changes: once the link is back the
// store catches up in order, by resuming the watch, and has the newest
// value of every key.
func TestWANOutageCatchUp(t *testing.T) {
	h := startHQ(t)
	s := newStore(t)
	proxy := testenv.StartFaultProxy(t, fmt.Sprintf("127.0.0.1:%d", h.nats.Port))
	h.put("_all.X0", "x", 1, true)
	s.start("nats://" + proxy.Addr())
	s.waitPrice("X0", 1)
	testenv.WaitFor(t, waitLong, "watching", func() bool { return s.w.State().Watching })

	proxy.Set(testenv.Reset, 0)
	testenv.WaitFor(t, waitLong, "watch down", func() bool { return !s.w.State().Watching })
	const changes, items = 1000, 100
	var last uint64
	for i := range changes {
		// Each item changes ten times; its last price is 1000+item.
		key := fmt.Sprintf("_all.X%d", i%items)
		price := int64(i)
		if i >= changes-items {
			price = int64(1000 + i%items)
		}
		last = h.put(key, "x", price, true)
	}
	h.put(store+".X7", "x for S1", 7, true)
	last++
	before := s.rec.count()
	start := time.Now()
	proxy.Set(testenv.Pass, 0)
	s.waitRevision(last)
	t.Logf("caught up %d changes in %v after the link came back", changes+1, time.Since(start).Round(time.Millisecond))
	// In order: the bucket keeps each key's newest entry, and the resumed
	// watch hands them over by rising revision, none twice.
	revs := s.rec.since(before)
	if len(revs) < items+1 {
		t.Errorf("%d changes applied after the outage, want at least the %d keys' newest", len(revs), items+1)
	}
	for i := 1; i < len(revs); i++ {
		if revs[i] <= revs[i-1] {
			t.Fatalf("revision %d applied after %d: out of order (%v)", revs[i], revs[i-1], revs)
		}
	}
	for i := range items {
		want := int64(1000 + i)
		if i == 7 {
			want = 7
		}
		if it := s.item(fmt.Sprintf("X%d", i)); it == nil || it.PriceCents != want {
			t.Fatalf("X%d = %+v, want price %d", i, it, want)
		}
	}
	if st := s.w.State(); st.Reloads != 1 {
		t.Errorf("%d reloads, want the first start's only: the outage resumes", st.Reloads)
	}
}

// The bucket recreated at HQ (its revisions restart low): the store
// notices and reloads it whole, taking the new values over higher
// revisions it holds.
func TestBucketRecreatedReloads(t *testing.T) {
	h := startHQ(t)
	s := newStore(t)
	for i := range 5 {
		h.put("_all.A", "Apple", int64(100+i), true)
	}
	s.start(h.nats.URL())
	s.waitPrice("A", 104)
	s.stop()

	if err := h.js.DeleteKeyValue(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	h.createBucket()
	h.put("_all.A", "Apple", 77, true)
	h.put(store+".B", "Banana", 55, true)

	s.start(h.nats.URL())
	s.waitPrice("A", 77)
	s.waitPrice("B", 55)
	// The items are in Redis before the reload is counted (after its
	// mark): wait for the count, then hold it to exactly one.
	testenv.WaitFor(t, waitLong, "the reload counted", func() bool { return s.w.State().Reloads >= 1 })
	if st := s.w.State(); st.Reloads != 1 {
		t.Errorf("%d reloads, want 1", st.Reloads)
	}
}
