package lua

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/internal/testenv"
)

// txnCall is one run of txn.lua with the KEYS/ARGV layout its header
// documents (edge/ledger's run is the real caller).
type txnCall struct {
	mode, total string
	lines       []txnLine
	maxCents    string   // "" = not passed (the script's own bound, 10^15)
	marks       []string // keys after the items: record, token pairs to mark COMPLETED
}

type txnLine struct{ barcode, qty, sold, refunded string }

const (
	kIdem     = "pe:{S}:idem:T01:k1"
	kSeq      = "pe:{S}:seq"
	kDaily    = "pe:{S}:daily:20261201"
	kHourly   = "pe:{S}:hourly:20261201"
	kToken    = "pe:{S}:token:k1"
	kRefunded = "pe:{S}:refunded:1000000000000001"
)

func item(barcode string) string { return "pe:{S}:item:" + barcode }

func (c txnCall) run(ctx context.Context, t *testing.T, rdb *redis.Client) []any {
	t.Helper()
	keys := []string{kIdem, kSeq, kDaily, kHourly, kToken, kRefunded}
	argv := []any{c.mode, "T01", "fp1", "cash", c.total, "10", "owner1", "1764590400000",
		"0", "86400", `"store_id":"S"}`, "0", "1000000000000009", fmt.Sprint(len(c.lines))}
	for _, l := range c.lines {
		keys = append(keys, item(l.barcode))
		sold, refunded := l.sold, l.refunded
		if sold == "" {
			sold = "0"
		}
		if refunded == "" {
			refunded = "0"
		}
		argv = append(argv, l.barcode, l.qty, sold, refunded)
	}
	if c.maxCents != "" {
		argv = append(argv, c.maxCents)
	}
	keys = append(keys, c.marks...)
	res, err := MustScript("txn.lua").Run(ctx, rdb, keys, argv...).Slice()
	if err != nil {
		return []any{"error", err.Error()}
	}
	return res
}

// snapshot is every key of the store with its value: what a refused call
// must leave exactly as it was.
func snapshot(ctx context.Context, t *testing.T, rdb *redis.Client) map[string]any {
	t.Helper()
	keys, err := rdb.Keys(ctx, "pe:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	out := map[string]any{}
	for _, k := range keys {
		switch typ := rdb.Type(ctx, k).Val(); typ {
		case "hash":
			out[k] = rdb.HGetAll(ctx, k).Val()
		case "string":
			out[k] = rdb.Get(ctx, k).Val()
		default:
			out[k] = typ
		}
	}
	return out
}

// Every refusal changes nothing, however often it is retried: the checks
// of money, quantities, stock and counters all come before the first
// write. The first cases failed before the fix: tonumber() made 1e17 a
// double that HINCRBY refused after the flow sequence, stock and the sales
// count had changed.
func TestTxnScriptRefusalChangesNothing(t *testing.T) {
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	ctx := context.Background()
	one := func(qty string) []txnLine { return []txnLine{{barcode: "A1", qty: qty}} }
	cases := []struct {
		name  string
		setup map[string]map[string]any // hashes set before the call
		call  txnCall
		want  []any // the reply's leading elements
	}{
		{"total 1e17, above every bound", nil, txnCall{mode: "sale", total: "100000000000000000", lines: one("1")},
			[]any{"invalid_amount", "total_cents"}},
		{"total above the max passed", nil, txnCall{mode: "sale", total: "100000000001", lines: one("1"), maxCents: "100000000000"},
			[]any{"invalid_amount", "total_cents"}},
		{"total above int64", nil, txnCall{mode: "batch", total: "9223372036854775808", lines: one("1")},
			[]any{"invalid_amount", "total_cents"}},
		{"fractional total", nil, txnCall{mode: "sale", total: "100.5", lines: one("1")}, []any{"invalid_amount", "total_cents"}},
		{"negative total", nil, txnCall{mode: "sale", total: "-100", lines: one("1")}, []any{"invalid_amount", "total_cents"}},
		{"total in exponent form", nil, txnCall{mode: "sale", total: "1e5", lines: one("1")}, []any{"invalid_amount", "total_cents"}},
		{"total with a leading zero", nil, txnCall{mode: "sale", total: "0100", lines: one("1")}, []any{"invalid_amount", "total_cents"}},
		{"total with a plus sign", nil, txnCall{mode: "sale", total: "+100", lines: one("1")}, []any{"invalid_amount", "total_cents"}},
		{"zero quantity", nil, txnCall{mode: "sale", total: "100", lines: one("0")}, []any{"invalid_amount", "qty"}},
		{"negative quantity", nil, txnCall{mode: "sale", total: "100", lines: one("-3")}, []any{"invalid_amount", "qty"}},
		{"quantity in exponent form", nil, txnCall{mode: "batch", total: "100", lines: one("1e17")}, []any{"invalid_amount", "qty"}},
		{"quantities of one barcode overflow int64", nil, txnCall{mode: "batch", total: "100",
			lines: []txnLine{{barcode: "A1", qty: "9223372036854775807"}, {barcode: "A1", qty: "1"}}}, []any{"invalid_amount", "qty"}},
		{"stock below int64 after a past sale", map[string]map[string]any{item("A1"): {"stock": "-9223372036854775800"}},
			txnCall{mode: "batch", total: "100", lines: one("100")}, []any{"counter_overflow", item("A1"), "stock"}},
		{"stock above int64 after a refund", map[string]map[string]any{item("A1"): {"stock": "9223372036854775800"}},
			txnCall{mode: "refund", total: "100", lines: []txnLine{{barcode: "A1", qty: "100", sold: "100"}}},
			[]any{"counter_overflow", item("A1"), "stock"}},
		{"day's sales cents would overflow", map[string]map[string]any{kDaily: {"t:T01:sales_cents": "9223372036854775000"}},
			txnCall{mode: "sale", total: "1000", lines: one("1")}, []any{"counter_overflow", kDaily, "t:T01:sales_cents"}},
		{"hour's sales cents would overflow", map[string]map[string]any{kHourly: {"10:sales_cents": "9223372036854775807"}},
			txnCall{mode: "sale", total: "1", lines: one("1")}, []any{"counter_overflow", kHourly, "10:sales_cents"}},
		{"day's sales cents not an integer", map[string]map[string]any{kDaily: {"t:T01:sales_cents": "1.5"}},
			txnCall{mode: "sale", total: "100", lines: one("1")}, []any{"corrupt", kDaily, "t:T01:sales_cents"}},
		{"refunded count not an integer", map[string]map[string]any{kRefunded: {"A1": "x"}},
			txnCall{mode: "refund", total: "100", lines: []txnLine{{barcode: "A1", qty: "1", sold: "3"}}}, []any{"corrupt", kRefunded, "A1"}},
		{"stock not an integer", map[string]map[string]any{item("A1"): {"stock": "lots"}},
			txnCall{mode: "sale", total: "100", lines: one("1")}, []any{"corrupt", item("A1"), "stock"}},
		{"insufficient stock", nil, txnCall{mode: "sale", total: "200", lines: one("6")}, []any{"insufficient_stock", "A1", "5"}},
		{"unknown item", nil, txnCall{mode: "sale", total: "100", lines: []txnLine{{barcode: "ZZ", qty: "1"}}}, []any{"unknown_item", "ZZ"}},
		{"refund above the sale", map[string]map[string]any{kRefunded: {"A1": "2"}},
			txnCall{mode: "refund", total: "200", lines: []txnLine{{barcode: "A1", qty: "2", sold: "3", refunded: "2"}}},
			[]any{"refund_exceeds_sale", "A1", "1"}},
		// Priced after one refunded unit while Redis holds two: another
		// refund landed in between, so this one must be priced again.
		{"refund priced before another landed", map[string]map[string]any{kRefunded: {"A1": "2"}},
			txnCall{mode: "refund", total: "100", lines: []txnLine{{barcode: "A1", qty: "1", sold: "3", refunded: "1"}}},
			[]any{"refund_repriced", "A1"}},
		// Issue 22 finding 9: before, the batch marked T02's token
		// PROCESSING, so T02's own sale with it failed.
		{"batch naming another till's payment token", map[string]map[string]any{kToken: {"terminal": "T02", "state": "PENDING"}},
			txnCall{mode: "batch", total: "100", lines: one("1")}, []any{"token_invalid"}},
		{"max_sale_cents argument not a number", nil, txnCall{mode: "sale", total: "100", lines: one("1"), maxCents: "1e11"},
			[]any{"invalid_argument", "max_sale_cents"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rdb.HSet(ctx, item("A1"), "name", "Apple", "price_cents", "100", "stock", "5")
			rdb.Set(ctx, kSeq, "41", 0)
			rdb.HSet(ctx, kDaily, "t:T01:sales", "7", "t:T01:sales_cents", "700")
			for k, fields := range tc.setup {
				rdb.HSet(ctx, k, fields)
			}
			before := snapshot(ctx, t, rdb)
			for try := 1; try <= 3; try++ {
				res := tc.call.run(ctx, t, rdb)
				if after := snapshot(ctx, t, rdb); !reflect.DeepEqual(after, before) {
					t.Fatalf("try %d (reply %v): a refused call changed Redis:\nbefore %v\nafter  %v", try, res, before, after)
				}
				if len(res) < len(tc.want) || !reflect.DeepEqual(res[:len(tc.want)], tc.want) {
					t.Fatalf("try %d: reply %v, want %v…", try, res, tc.want)
				}
			}
		})
	}
}

// Amounts above 2^53 (where doubles skip odd numbers) are added exactly:
// before the fix 9007199254740993 was stored as …992. Counts and stock
// above 2^53 are exact too.
func TestTxnScriptIntegersAboveDoublePrecisionStayExact(t *testing.T) {
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	ctx := context.Background()
	const int64Max = "9223372036854775807"

	rdb.HSet(ctx, item("A1"), "name", "Apple", "price_cents", "1", "stock", "9007199254740995")
	res := txnCall{mode: "sale", total: "9007199254740993", lines: []txnLine{{barcode: "A1", qty: "9007199254740993"}},
		maxCents: int64Max}.run(ctx, t, rdb)
	if len(res) < 2 || res[0] != "ok" {
		t.Fatalf("sale: %v", res)
	}
	for _, c := range []struct{ key, field, want string }{
		{kDaily, "t:T01:sales_cents", "9007199254740993"},
		{kDaily, "x:cash:sales_cents", "9007199254740993"},
		{kHourly, "10:sales_cents", "9007199254740993"},
		{kDaily, "t:T01:sales", "1"},
		{item("A1"), "stock", "2"},
	} {
		if got := rdb.HGet(ctx, c.key, c.field).Val(); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.key, c.field, got, c.want)
		}
	}

	// A refund on top of a refunded count above 2^53.
	rdb.Del(ctx, kIdem)
	rdb.HSet(ctx, kRefunded, "A1", "9007199254740993")
	res = txnCall{mode: "refund", total: "3", lines: []txnLine{{barcode: "A1", qty: "2", sold: int64Max, refunded: "9007199254740993"}}, maxCents: int64Max}.run(ctx, t, rdb)
	if len(res) < 2 || res[0] != "ok" {
		t.Fatalf("refund: %v", res)
	}
	if got := rdb.HGet(ctx, kRefunded, "A1").Val(); got != "9007199254740995" {
		t.Errorf("refunded = %q, want 9007199254740995", got)
	}
	if got := rdb.HGet(ctx, item("A1"), "stock").Val(); got != "4" {
		t.Errorf("stock after the refund = %q, want 4", got)
	}
	if got := rdb.HGet(ctx, kDaily, "t:T01:refund_cents").Val(); got != "3" {
		t.Errorf("refund cents = %q, want 3", got)
	}

	// Up to the last cent of int64, and not one more.
	rdb.Del(ctx, kIdem)
	rdb.HSet(ctx, kDaily, "t:T01:sales_cents", "9223372036854775800")
	rdb.HSet(ctx, kDaily, "x:cash:sales_cents", "0")
	rdb.HSet(ctx, kHourly, "10:sales_cents", "0")
	if res := (txnCall{mode: "batch", total: "7", lines: []txnLine{{barcode: "A1", qty: "1"}}, maxCents: int64Max}).run(ctx, t, rdb); res[0] != "ok" {
		t.Fatalf("sale up to int64 max: %v", res)
	}
	if got := rdb.HGet(ctx, kDaily, "t:T01:sales_cents").Val(); got != int64Max {
		t.Errorf("sales cents = %q, want %s", got, int64Max)
	}
	rdb.Del(ctx, kIdem)
	if res := (txnCall{mode: "batch", total: "1", lines: []txnLine{{barcode: "A1", qty: "1"}}, maxCents: int64Max}).run(ctx, t, rdb); res[0] != "counter_overflow" {
		t.Fatalf("one cent past int64 max: %v, want counter_overflow", res)
	}
}

// The bound the caller passes is the bound: a total equal to it passes.
func TestTxnScriptAcceptsTotalAtTheBound(t *testing.T) {
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	ctx := context.Background()
	rdb.HSet(ctx, item("A1"), "name", "Apple", "price_cents", "100000000000", "stock", "5")
	res := txnCall{mode: "sale", total: "100000000000", lines: []txnLine{{barcode: "A1", qty: "1"}}, maxCents: "100000000000"}.run(ctx, t, rdb)
	if res[0] != "ok" || res[1] != "1000000000000001" {
		t.Fatalf("reply %v, want ok with the first flow number", res)
	}
	if got := rdb.HGet(ctx, kDaily, "t:T01:sales_cents").Val(); got != "100000000000" {
		t.Fatalf("sales cents %q", got)
	}
}

// BenchmarkTxnScript is one sale of three lines through txn.lua on a
// single Redis: the cost of the script's checks (make bench).
func BenchmarkTxnScript(b *testing.B) {
	rdb := testenv.StartRedisSingle(b).NodeClient(0)
	ctx := context.Background()
	for _, bc := range []string{"A1", "B2", "C3"} {
		rdb.HSet(ctx, item(bc), "name", bc, "price_cents", "100", "stock", "1000000000000")
	}
	s := MustScript("txn.lua")
	b.ResetTimer()
	for i := range b.N {
		keys := []string{fmt.Sprintf("pe:{S}:idem:T01:k%d", i), kSeq, kDaily, kHourly, "pe:{S}:token:k", kRefunded,
			item("A1"), item("B2"), item("C3")}
		res, err := s.Run(ctx, rdb, keys, "sale", "T01", "fp", "cash", "600", "10", "o", "1764590400000", "0", "86400",
			`"store_id":"S"}`, "0", "", "3", "A1", "1", "0", "0", "B2", "2", "0", "0", "C3", "3", "0", "0").Slice()
		if err != nil || res[0] != "ok" {
			b.Fatalf("%v %v", res, err)
		}
	}
	b.StopTimer()
	// Redis's own time per script call, apart from the network and a
	// busy machine's scheduling.
	info := rdb.Info(ctx, "commandstats").Val()
	for _, l := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(l, "cmdstat_evalsha:"); ok {
			for _, kv := range strings.Split(strings.TrimSpace(rest), ",") {
				if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					if f, err := strconv.ParseFloat(v, 64); err == nil {
						b.ReportMetric(f, "redis-µs/op")
					}
				}
			}
		}
	}
}

// undo runs txn_undo.lua for the call c that txn.lua answered with flow.
func (c txnCall) undo(ctx context.Context, t *testing.T, rdb *redis.Client, owner, flow string) []any {
	t.Helper()
	keys := []string{kIdem, kSeq, kDaily, kHourly, kToken, kRefunded}
	argv := []any{c.mode, "T01", "fp1", "cash", c.total, "10", owner, flow, fmt.Sprint(len(c.lines))}
	for _, l := range c.lines {
		keys = append(keys, item(l.barcode))
		argv = append(argv, l.barcode, l.qty)
	}
	res, err := MustScript("txn_undo.lua").Run(ctx, rdb, keys, argv...).Slice()
	if err != nil {
		return []any{"error", err.Error()}
	}
	return res
}

// settled is snapshot without the flow sequence (an undone call's number
// stays used: a gap) and without counters at zero (a field the call
// created and the undo took back to 0 counts nothing).
func settled(ctx context.Context, t *testing.T, rdb *redis.Client) map[string]any {
	t.Helper()
	out := snapshot(ctx, t, rdb)
	delete(out, kSeq)
	for k, v := range out {
		h, ok := v.(map[string]string)
		if !ok {
			continue
		}
		for f, x := range h {
			if x == "0" && f != "stock" {
				delete(h, f)
			}
		}
		if len(h) == 0 {
			delete(out, k)
		}
	}
	return out
}

// txn_undo.lua takes back exactly what txn.lua did for a sale, a refund
// and a batch sale with an item Redis does not know, the payment token
// included: Redis is as before the call (issue 22 finding 5, a sale
// answered 503 journal_unavailable). A second undo, or one naming another
// owner or flow number, changes nothing.
func TestTxnUndoTakesBackExactly(t *testing.T) {
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	ctx := context.Background()
	cases := []struct {
		name string
		call txnCall
	}{
		{"sale of two lines of one barcode", txnCall{mode: "sale", total: "300", lines: []txnLine{{barcode: "A1", qty: "1"}, {barcode: "A1", qty: "2"}}}},
		{"refund", txnCall{mode: "refund", total: "100", lines: []txnLine{{barcode: "A1", qty: "1", sold: "3", refunded: "1"}}}},
		{"batch sale with an unknown item", txnCall{mode: "batch", total: "250", lines: []txnLine{{barcode: "A1", qty: "2"}, {barcode: "ZZ", qty: "1"}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rdb.HSet(ctx, item("A1"), "name", "Apple", "price_cents", "100", "stock", "5")
			rdb.Set(ctx, kSeq, "41", 0)
			rdb.HSet(ctx, kDaily, "t:T01:sales", "7", "t:T01:sales_cents", "700", "t:T01:refunds", "1", "t:T01:refund_cents", "100")
			rdb.HSet(ctx, kRefunded, "A1", "1")
			rdb.HSet(ctx, kToken, "terminal", "T01", "state", "PENDING")
			before := settled(ctx, t, rdb)
			res := tc.call.run(ctx, t, rdb)
			if len(res) < 2 || res[0] != "ok" {
				t.Fatalf("txn.lua: %v", res)
			}
			flow := res[1].(string)
			if reflect.DeepEqual(settled(ctx, t, rdb), before) {
				t.Fatal("txn.lua changed nothing: the test proves nothing")
			}
			for _, other := range []struct{ owner, flow string }{{"owner2", flow}, {"owner1", "1000000000000999"}} {
				if r := tc.call.undo(ctx, t, rdb, other.owner, other.flow); len(r) == 0 || r[0] != "not_ours" {
					t.Fatalf("undo of owner %s flow %s: %v", other.owner, other.flow, r)
				}
			}
			if r := tc.call.undo(ctx, t, rdb, "owner1", flow); len(r) == 0 || r[0] != "undone" {
				t.Fatalf("undo: %v", r)
			}
			if after := settled(ctx, t, rdb); !reflect.DeepEqual(after, before) {
				t.Fatalf("after the undo:\n%v\nbefore the call:\n%v", after, before)
			}
			if r := tc.call.undo(ctx, t, rdb, "owner1", flow); len(r) == 0 || r[0] != "not_ours" {
				t.Fatalf("second undo: %v", r)
			}
			if after := settled(ctx, t, rdb); !reflect.DeepEqual(after, before) {
				t.Fatalf("a second undo changed Redis: %v", after)
			}
		})
	}
}

// A completion that reaches a Redis without the sale (another master
// after a failover or a split brain) must leave no record there: a bare
// COMPLETED record made the repair skip the sale, and the cut-off
// master's stock decrement was lost at the heal (e2e TestRedisSplitBrain).
func TestTxnCompleteMarksOnlyAnExistingRecord(t *testing.T) {
	ctx := context.Background()
	rdb := startRedis(t)
	complete := MustScript("txn_complete.lua")

	n, err := complete.Run(ctx, rdb, []string{kIdem, kToken}).Int()
	if err != nil || n != 0 {
		t.Fatalf("completion on a Redis without the record: %d, %v; want 0", n, err)
	}
	if got := rdb.Exists(ctx, kIdem, kToken).Val(); got != 0 {
		t.Fatalf("completion created %d keys on a Redis that lacked the sale", got)
	}

	rdb.HSet(ctx, kIdem, "state", "PROCESSING", "fp", "fp1")
	rdb.HSet(ctx, kToken, "state", "PROCESSING")
	if n, err := complete.Run(ctx, rdb, []string{kIdem, kToken}).Int(); err != nil || n != 1 {
		t.Fatalf("completion of a held record: %d, %v; want 1", n, err)
	}
	for _, k := range []string{kIdem, kToken} {
		if st := rdb.HGet(ctx, k, "state").Val(); st != "COMPLETED" {
			t.Errorf("%s state %q after completion, want COMPLETED", k, st)
		}
	}
	if fp := rdb.HGet(ctx, kIdem, "fp").Val(); fp != "fp1" {
		t.Errorf("completion changed the record's other fields: fp %q", fp)
	}
}

// The record keeps the result the daemon packed (ARGV[11]) byte for byte
// in field rz, never a body field, and an existing record answers both
// fields: body for a record of the old layout, rz for a new one. Failed
// on the old script, which stored the whole result in body.
func TestTxnRecordKeepsPackedResult(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	rdb.HSet(ctx, item("A"), "name", "A", "price_cents", "100", "stock", "10", "active", "1")
	c := txnCall{mode: "sale", total: "100", lines: []txnLine{{barcode: "A", qty: "1"}}}
	if res := c.run(ctx, t, rdb); res[0] != "ok" {
		t.Fatalf("sale: %v", res)
	}
	rec := rdb.HGetAll(ctx, kIdem).Val()
	if _, ok := rec["body"]; ok || rec["rz"] != `"store_id":"S"}` {
		t.Fatalf("record %v: want rz the packed argument and no body", rec)
	}
	res := c.run(ctx, t, rdb)
	want := []any{"exists", "PROCESSING", int64(1), rec["flow_no"], "owner1", "1764590400000", "", `"store_id":"S"}`}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("retry: %v, want %v", res, want)
	}
	rdb.HDel(ctx, kIdem, "rz")
	rdb.HSet(ctx, kIdem, "body", `{"flow_no":"x","old":1}`)
	res = c.run(ctx, t, rdb)
	if len(res) != 8 || res[6] != `{"flow_no":"x","old":1}` || res[7] != "" {
		t.Fatalf("retry on an old-layout record: %v", res)
	}
}

// TestDegradedApplyTouchesOnlyItsOwnTillsToken: a degraded sale was
// journaled without Redis, so without the payment-token check; applied
// later, it must not mark another till's token PROCESSING (that till's
// sale with it would fail, issue 22 finding 9). The sale itself is
// applied: it happened. Its own till's token is marked as before.
func TestDegradedApplyTouchesOnlyItsOwnTillsToken(t *testing.T) {
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	ctx := context.Background()
	for _, c := range []struct {
		name, mode, tokenTill, want string
	}{
		{"T01's degraded sale naming T02's token", "apply_sale", "T02", "PENDING"},
		{"T01's degraded refund naming T02's token", "apply_refund", "T02", "PENDING"},
		{"T01's degraded sale naming its own token", "apply_sale", "T01", "PROCESSING"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := rdb.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rdb.HSet(ctx, item("A1"), "name", "Apple", "price_cents", "100", "stock", "5")
			rdb.Set(ctx, kSeq, "41", 0)
			rdb.HSet(ctx, kToken, "terminal", c.tokenTill, "state", "PENDING")
			res := txnCall{mode: c.mode, total: "100", lines: []txnLine{{barcode: "A1", qty: "1", sold: "1"}}}.run(ctx, t, rdb)
			if len(res) == 0 || res[0] != "ok" {
				t.Fatalf("txn.lua %s: %v (the sale happened: it must be applied)", c.mode, res)
			}
			tok := rdb.HGetAll(ctx, kToken).Val()
			if tok["state"] != c.want || tok["terminal"] != c.tokenTill {
				t.Errorf("token after %s: %v, want state %s", c.mode, tok, c.want)
			}
			if was, own := rdb.HExists(ctx, kIdem, "token_was").Val(), c.tokenTill == "T01"; was != own {
				t.Errorf("record keeps token_was: %v, want %v (undo must restore only what the call changed)", was, own)
			}
		})
	}
}

// txn.lua carries the COMPLETED marks of sales the daemon journaled since
// its last call (issue 26: they used to be a txn_complete.lua call each).
// As that script: a record only while it exists, its token only then and
// only while it exists; whatever the call's own answer, a refusal
// included, which still changes nothing of its own sale. A call whose
// marks are not whole pairs is refused and marks nothing.
func TestTxnCarriesCompletionMarks(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedisSingle(t).NodeClient(0)
	const (
		rec1, tok1 = "pe:{S}:idem:T01:pt_1", "pe:{S}:token:pt_1"
		rec2, tok2 = "pe:{S}:idem:T02:gone", "pe:{S}:token:pt_2" // no record: its token stays
		rec3, tok3 = "pe:{S}:idem:T03:k3", "pe:{S}:token:k3"     // a key that is no token
	)
	rdb.HSet(ctx, item("A"), "name", "A", "price_cents", "100", "stock", "10", "active", "1")
	rdb.HSet(ctx, rec1, "state", "PROCESSING", "fp", "f1")
	rdb.HSet(ctx, tok1, "state", "PROCESSING", "terminal", "T01")
	rdb.HSet(ctx, tok2, "state", "PENDING", "terminal", "T02")
	state := func(k string) string { return rdb.HGet(ctx, k, "state").Val() }

	sale := txnCall{mode: "sale", total: "100", lines: []txnLine{{barcode: "A", qty: "1"}}, marks: []string{rec1, tok1, rec2, tok2}}
	if res := sale.run(ctx, t, rdb); res[0] != "ok" {
		t.Fatalf("sale carrying marks: %v", res)
	}
	if state(rec1) != "COMPLETED" || state(tok1) != "COMPLETED" {
		t.Fatalf("record %q, token %q after the call that carried their mark; want COMPLETED", state(rec1), state(tok1))
	}
	if rdb.Exists(ctx, rec2).Val() != 0 || state(tok2) != "PENDING" {
		t.Fatalf("a mark of a record this Redis lacks made it (%d) or touched its token (%q)", rdb.Exists(ctx, rec2).Val(), state(tok2))
	}

	rdb.HSet(ctx, rec3, "state", "PROCESSING")
	rdb.Del(ctx, kIdem) // the call's own key: fresh again
	before := settled(ctx, t, rdb)
	refused := txnCall{mode: "sale", total: "100", lines: []txnLine{{barcode: "NOPE", qty: "1"}}, marks: []string{rec3, tok3}}
	if res := refused.run(ctx, t, rdb); res[0] != "unknown_item" {
		t.Fatalf("refused sale: %v", res)
	}
	if state(rec3) != "COMPLETED" || rdb.Exists(ctx, tok3).Val() != 0 {
		t.Fatalf("a refusal carrying a mark: record %q, token made %d", state(rec3), rdb.Exists(ctx, tok3).Val())
	}
	after := settled(ctx, t, rdb)
	after[rec3] = before[rec3] // the mark; nothing else may differ
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("a refusal changed Redis beyond its marks:\nbefore %v\nafter  %v", before, after)
	}

	rdb.HSet(ctx, rec1, "state", "PROCESSING")
	odd := txnCall{mode: "sale", total: "100", lines: []txnLine{{barcode: "A", qty: "1"}}, marks: []string{rec1}}
	odd.run(ctx, t, rdb) // the key of k1 exists: "exists", or refused for its keys; either way:
	if state(rec1) != "PROCESSING" {
		t.Fatal("a call with half a mark marked it")
	}
}
