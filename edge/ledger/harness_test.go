package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// env is a ledger over a real standalone Redis and a real journal file,
// both started through testenv; restart opens a second daemon's ledger
// on the same two.
type env struct {
	t       testing.TB
	ctx     context.Context
	redis   *testenv.Redis
	rdb     *redis.Client
	jPath   string
	j       *journal.Journal
	l       *ledger.Ledger
	journal journal.Options
	// proxy, when set, carries every byte between the ledger and Redis
	// (newProxiedEnv): real link faults, the test reading Redis directly.
	proxy *testenv.FaultProxy
	now   func() time.Time // the ledger's clock; nil = time.Now
	node  int              // the ledger's node_id
}

func newEnv(t testing.TB, o journal.Options) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), journal: o}
	e.redis = testenv.StartRedisSingle(t)
	e.rdb = e.redis.NodeClient(0)
	e.jPath = filepath.Join(t.TempDir(), "journal.db")
	e.open()
	return e
}

// newProxiedEnv is newEnv with the ledger's Redis link through a fault
// proxy (e.proxy); e.rdb stays the ledger's client.
func newProxiedEnv(t testing.TB, o journal.Options) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), journal: o}
	e.redis = testenv.StartRedisSingle(t)
	e.proxy = testenv.StartFaultProxy(t, e.redis.NodeAddr(0))
	c := redis.NewClient(&redis.Options{Addr: e.proxy.Addr(), DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	e.rdb = c
	e.jPath = filepath.Join(t.TempDir(), "journal.db")
	e.open()
	return e
}

// peer opens a second daemon on the same Redis, as node_id node, with a
// journal of its own; its Redis link is direct (no proxy).
func (e *env) peer(node int) *env {
	e.t.Helper()
	p := &env{t: e.t, ctx: e.ctx, redis: e.redis, rdb: e.redis.NodeClient(0), node: node,
		jPath: filepath.Join(e.t.TempDir(), fmt.Sprintf("journal-node%d.db", node))}
	p.open()
	return p
}

// open opens the journal and a ledger on it: a daemon starting.
func (e *env) open() {
	e.t.Helper()
	var err error
	e.j, err = journal.Open(e.ctx, e.jPath, e.journal)
	if err != nil {
		e.t.Fatal(err)
	}
	j := e.j
	e.t.Cleanup(func() { j.Close() })
	e.l, err = ledger.New(e.ctx, ledger.Config{StoreID: "S1", NodeID: e.node, RedisTimeout: time.Second, Now: e.now}, e.rdb, e.j,
		slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
	if err != nil {
		e.t.Fatal(err)
	}
}

// restart closes the journal and opens it and a new ledger again, as a
// daemon restarted after a crash would (a new owner of in-flight records).
func (e *env) restart(o journal.Options) {
	e.t.Helper()
	if err := e.j.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.journal = o
	e.open()
}

func (e *env) putItem(barcode string, price, stock int64) {
	e.t.Helper()
	if err := e.l.PutItem(e.ctx, ledger.Item{Barcode: barcode, Name: "item " + barcode, PriceCents: price, Stock: stock}); err != nil {
		e.t.Fatalf("put item %s: %v", barcode, err)
	}
}

// stock reads an item's stock from Redis (the ledger must not be degraded).
func (e *env) stock(barcode string) int64 {
	e.t.Helper()
	it, err := e.l.Item(e.ctx, barcode)
	if err != nil {
		e.t.Fatalf("item %s: %v", barcode, err)
	}
	if it.Stale {
		e.t.Fatalf("item %s read from the journal's copy: the ledger is degraded", barcode)
	}
	return it.Stock
}

// today is the day's totals from Redis's counters.
func (e *env) today() ledger.Totals {
	e.t.Helper()
	d, err := e.l.DailyStats(e.ctx, e.l.Today())
	if err != nil {
		e.t.Fatal(err)
	}
	if d.Source != "redis" {
		e.t.Fatalf("daily stats from %s, want redis", d.Source)
	}
	return d.Totals
}

func (e *env) sale(term, key string, s ledger.SaleRequest) (*ledger.Result, error) {
	return e.l.Sale(e.ctx, term, key, s)
}

func (e *env) mustSale(term, key string, s ledger.SaleRequest) *ledger.Result {
	e.t.Helper()
	r, err := e.sale(term, key, s)
	if err != nil {
		e.t.Fatalf("sale %s: %v", key, err)
	}
	return r
}

// journaled is the journal's row of a key, or nil.
func (e *env) journaled(term, key string) *journal.Txn {
	e.t.Helper()
	t, err := e.j.ByKey(e.ctx, term, key)
	if err != nil {
		e.t.Fatal(err)
	}
	return t
}

func sale1(barcode string, qty, price int64) ledger.SaleRequest {
	return ledger.SaleRequest{Lines: []ledger.Line{{Barcode: barcode, Qty: qty, PriceCents: price}}, TotalCents: qty * price, Tender: "cash"}
}

// refusal is err as a ledger refusal, failing the test when it is not one.
func refusal(t testing.TB, err error) *ledger.Error {
	t.Helper()
	var le *ledger.Error
	if !errors.As(err, &le) {
		t.Fatalf("want a *ledger.Error, got %v", err)
	}
	return le
}

// waitCompleted waits until the idempotency records of the given
// "terminal:key"s are marked COMPLETED in Redis (done off the answer's
// path). Records are found by their name's end, not the whole layout.
func (e *env) waitCompleted(termKeys ...string) {
	e.t.Helper()
	testenv.WaitFor(e.t, 5*time.Second, "idempotency records COMPLETED", func() bool {
		for _, tk := range termKeys {
			if e.recordState(e.rdb, tk) != "COMPLETED" {
				return false
			}
		}
		return true
	})
}

// recordState is the state of the idempotency record of "terminal:key"
// as c reads it; "" when there is not exactly one such record.
func (e *env) recordState(c *redis.Client, termKey string) string {
	names, err := c.Keys(e.ctx, "*idem:"+termKey).Result()
	if err != nil || len(names) != 1 {
		return ""
	}
	st, _ := c.HGet(e.ctx, names[0], "state").Result()
	return st
}
