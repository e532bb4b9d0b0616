package redisdb_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/internal/testenv"
)

// scriptCalls records the KEYS and ARGV of every script call a client
// sends (EVALSHA or EVAL, alone or in a pipeline), as Redis reads them.
type scriptCalls struct {
	mu    sync.Mutex
	calls []string
}

func (s *scriptCalls) record(c redis.Cmder) {
	a := c.Args()
	if n := strings.ToLower(fmt.Sprint(a[0])); n != "evalsha" && n != "eval" {
		return
	}
	s.mu.Lock()
	words := make([]string, 0, len(a)-2)
	for _, w := range a[2:] { // numkeys, KEYS, ARGV
		words = append(words, fmt.Sprint(w))
	}
	s.calls = append(s.calls, strings.Join(words, " "))
	s.mu.Unlock()
}

func (s *scriptCalls) last(t *testing.T) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) == 0 {
		t.Fatal("no script call sent")
	}
	return s.calls[len(s.calls)-1]
}

func (s *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error { s.record(c); return next(ctx, c) }
}

func (s *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		for _, c := range cs {
			s.record(c)
		}
		return next(ctx, cs)
	}
}

// Each typed call sends its script the KEYS and ARGV in the order the
// .lua reads them, spelt out here as the ledger, the limiter and the lock
// built them before they moved to this package: a change of order is a
// change of the wire to Redis, which needs a change of the script too.
func TestScriptCallsKeysAndArgv(t *testing.T) {
	r := testenv.StartRedisSingle(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.NodeAddr(0), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	var rec scriptCalls
	rdb.AddHook(&rec)
	ctx := context.Background()
	k := redisdb.NewKeys("S")
	sale := redisdb.Txn{Mode: "sale", Term: "T01", Key: "k1", Fingerprint: "fp", Tender: "cash", Day: "20261201", Hour: "09",
		Total: 300, Owner: "own", NowMillis: 1700, SeqFloor: 41, IdemTTLSeconds: 172800, BodyRest: `"x":1}`, TokenForm: true,
		Flow: "", RefundOf: "", MaxSaleCents: 999, Lines: []redisdb.TxnLine{{Barcode: "A", Qty: 2, Sold: 0, RefundedJr: 0}}}
	apply := sale
	apply.Mode, apply.Flow, apply.TokenForm = "apply_sale", "1000000000000042", false
	marked := sale
	marked.Marks = []redisdb.Mark{{Term: "T02", Key: "pt_y"}, {Term: "T03", Key: "k9"}}
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"txn.lua, a request", func() { redisdb.RunTxn(ctx, rdb, k, sale, nil) },
			"7 pe:{S}:idem:T01:k1 pe:{S}:seq pe:{S}:daily:20261201 pe:{S}:hourly:20261201 pe:{S}:token:k1 pe:{S}:refunded: pe:{S}:item:A " +
				`sale T01 fp cash 300 09 own 1700 41 172800 "x":1} 1  1 A 2 0 0 999`},
		{"txn.lua, a journaled one applied again: no bound", func() { redisdb.RunTxn(ctx, rdb, k, apply, nil) },
			"7 pe:{S}:idem:T01:k1 pe:{S}:seq pe:{S}:daily:20261201 pe:{S}:hourly:20261201 pe:{S}:token:k1 pe:{S}:refunded: pe:{S}:item:A " +
				`apply_sale T01 fp cash 300 09 own 1700 41 172800 "x":1} 0 1000000000000042 1 A 2 0 0`},
		{"txn.lua carrying completion marks: record, token pairs after the items", func() { redisdb.RunTxn(ctx, rdb, k, marked, nil) },
			"11 pe:{S}:idem:T01:k1 pe:{S}:seq pe:{S}:daily:20261201 pe:{S}:hourly:20261201 pe:{S}:token:k1 pe:{S}:refunded: pe:{S}:item:A " +
				"pe:{S}:idem:T02:pt_y pe:{S}:token:pt_y pe:{S}:idem:T03:k9 pe:{S}:token:k9 " +
				`sale T01 fp cash 300 09 own 1700 41 172800 "x":1} 1  1 A 2 0 0 999`},
		{"txn_undo.lua", func() { redisdb.RunUndo(ctx, rdb, k, sale, "1000000000000042") },
			"7 pe:{S}:idem:T01:k1 pe:{S}:seq pe:{S}:daily:20261201 pe:{S}:hourly:20261201 pe:{S}:token:k1 pe:{S}:refunded: pe:{S}:item:A " +
				"sale T01 fp cash 300 09 own 1000000000000042 1 A 2"},
		{"txn_complete.lua, a token key", func() { redisdb.RunComplete(ctx, rdb, k, "T01", "pt_x", true) },
			"2 pe:{S}:idem:T01:pt_x pe:{S}:token:pt_x"},
		{"txn_complete.lua, a plain key", func() { redisdb.RunComplete(ctx, rdb, k, "T01", "k1", false) },
			"1 pe:{S}:idem:T01:k1"},
		{"catalog_apply.lua", func() {
			redisdb.RunCatalogApply(ctx, rdb, k, redisdb.CatalogApply{Barcode: "A", Name: "a", PriceCents: 150, Active: true, Revision: 7, StoreKey: true, Create: true})
		}, "1 pe:{S}:item:A a 150 1 7 store 0 1"},
		{"item_restore.lua, catalog", func() {
			redisdb.RunRestoreCatalog(ctx, rdb, k, []redisdb.CatalogEntry{{Barcode: "A", Name: "a", PriceCents: 150, Active: true, Revision: 7, Source: "all", Known: true}, {Barcode: "B"}})
		}, "2 pe:{S}:item:A pe:{S}:item:B catalog a 150 1 7 all  0 1 0 "},
		{"item_restore.lua, create", func() {
			redisdb.RunRestoreCreate(ctx, rdb, k, []redisdb.LostItem{{Barcode: "A", Name: "a", PriceCents: 150, Stock: 4, Revision: 7, Source: "store"}})
		}, "1 pe:{S}:item:A create a 150 4 0 7 store"},
		{"stock_adjust.lua", func() { redisdb.RunStockAdjust(ctx, rdb, k, "A", "adj1", -3, "id", "fp", 172800) },
			"2 pe:{S}:item:A pe:{S}:adj:adj1 -3 id fp 172800"},
		{"snapshot.lua", func() { redisdb.RunSnapshot(ctx, rdb, k.SnapshotKeys([]string{"d1", "d2"}, []string{"A"}), 2) },
			"6 pe:{S}:seq pe:{S}:daily:d1 pe:{S}:daily:d2 pe:{S}:hourly:d1 pe:{S}:hourly:d2 pe:{S}:item:A 2"},
		{"seq_raise.lua", func() { redisdb.RunSeqRaise(ctx, rdb, k, 41) }, "1 pe:{S}:seq 41"},
		{"ratelimit.lua", func() {
			_, _, _ = redisdb.RunRateLimit(ctx, rdb, k, "m.1", []redisdb.RateLevel{{Key: k.RateStore(), Limit: 600, WindowMillis: 60000},
				{Key: k.RateAction("T01", "pay"), Limit: 30, WindowMillis: 60000, Scale: "pay"}}, nil)
		}, "3 pe:{S}:promo pe:{S}:rl:s pe:{S}:rl:a:T01:pay m.1 600 60000  30 60000 pay"},
		{"lock_acquire.lua", func() { redisdb.RunLockAcquire(ctx, rdb, k.Lock("job"), "tok", 500) },
			"2 pe:{S}:lock:job pe:{S}:lock:job:fence tok 500"},
		{"lock_extend.lua", func() { redisdb.RunLockExtend(ctx, rdb, k.Lock("job"), "tok", 500) }, "1 pe:{S}:lock:job tok 500"},
		{"lock_release.lua", func() { redisdb.RunLockRelease(ctx, rdb, k.Lock("job"), "tok") }, "1 pe:{S}:lock:job tok"},
		{"correct.lua, fenced", func() {
			run := func(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
				return redisdb.RunFenced(ctx, rdb, s, k.Lock("reconcile"), 3, keys, args...).Result()
			}
			_ = redisdb.RunCorrect(ctx, run, []redisdb.CorrectOp{k.CounterOp("d1", true, "t:T01:sales", 2), k.StockOp("A", -1),
				k.ItemOp("B", "b", 99, 5), k.CatalogOp("B", false, 7, "all")})
		}, "5 pe:{S}:lock:reconcile:fence pe:{S}:hourly:d1 pe:{S}:item:A pe:{S}:item:B pe:{S}:item:B 3 " +
			"counter t:T01:sales 2  stock  -1  item b 99 5 catalog 0 7 all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.call()
			if got := rec.last(t); got != tt.want {
				t.Errorf("sent\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}
