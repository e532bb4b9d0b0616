package redisdb

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/lua"
)

// Each script of lua/, loaded once; a missing file is a build defect
// caught by lua's tests. Every call below builds the script's KEYS and
// ARGV in the order its .lua reads them: that order is written here and
// nowhere else.
var (
	txnScript      = lua.MustScript("txn.lua")
	undoScript     = lua.MustScript("txn_undo.lua")
	completeScript = lua.MustScript("txn_complete.lua")
	catalogScript  = lua.MustScript("catalog_apply.lua")
	restoreScript  = lua.MustScript("item_restore.lua")
	adjustScript   = lua.MustScript("stock_adjust.lua")
	snapshotScript = lua.MustScript("snapshot.lua")
	correctScript  = lua.MustScript("correct.lua")
	seqRaiseScript = lua.MustScript("seq_raise.lua")
	rateScript     = lua.MustScript("ratelimit.lua")
	acquireScript  = lua.MustScript("lock_acquire.lua")
	extendScript   = lua.MustScript("lock_extend.lua")
	releaseScript  = lua.MustScript("lock_release.lua")
)

// Txn is one run of txn.lua (a sale or refund, or a journaled one applied
// again) or of txn_undo.lua, which takes back a run the journal refused.
type Txn struct {
	Mode, Term, Key, Fingerprint, Tender, Day, Hour string
	Total                                           int64
	Owner                                           string // the daemon instance
	NowMillis                                       int64
	SeqFloor                                        int64 // highest sequence number journaled
	IdemTTLSeconds                                  int64
	BodyRest                                        string
	TokenForm                                       bool
	Flow                                            string // apply modes; the flow undone for txn_undo.lua
	RefundOf                                        string
	Lines                                           []TxnLine
	// MaxSaleCents bounds a request; it is not sent for a journaled
	// transaction (mode apply_*): that was checked when it was recorded,
	// and a bound lowered since must not make it unappliable (the
	// script's own bound, cents.MaxSaleCentsCeiling, still holds).
	MaxSaleCents int64
	// Marks are records of sales and refunds journaled since, which
	// txn.lua marks COMPLETED in passing (as RunComplete would, without
	// a script call of its own); only RunTxn sends them.
	Marks []Mark
}

// Mark names the idempotency record of (Term, Key) to mark COMPLETED,
// with its payment token when there is one.
type Mark struct{ Term, Key string }

// TxnLine is one line of a Txn.
type TxnLine struct {
	Barcode               string
	Qty, Sold, RefundedJr int64
}

// IsApply reports whether mode applies a journaled transaction again.
func IsApply(mode string) bool { return strings.HasPrefix(mode, "apply_") }

func (k Keys) txnKeys(t Txn) []string {
	ks := make([]string, 0, 6+len(t.Lines))
	ks = append(ks, k.Idem(t.Term, t.Key), k.Seq(), k.Daily(t.Day), k.Hourly(t.Day), k.Token(t.Key), k.Refunded(t.RefundOf))
	for _, ln := range t.Lines {
		ks = append(ks, k.Item(ln.Barcode))
	}
	return ks
}

// RunTxn runs txn.lua, then the commands more queues (e.g. WAIT), on one
// connection in one round trip (lua.RunPipelined).
func RunTxn(ctx context.Context, rdb redis.UniversalClient, k Keys, t Txn, more func(redis.Pipeliner)) *redis.Cmd {
	argv := []any{t.Mode, t.Term, t.Fingerprint, t.Tender, t.Total, t.Hour, t.Owner, t.NowMillis,
		t.SeqFloor, t.IdemTTLSeconds, t.BodyRest, boolArg(t.TokenForm), t.Flow, len(t.Lines)}
	for _, ln := range t.Lines {
		argv = append(argv, ln.Barcode, ln.Qty, ln.Sold, ln.RefundedJr)
	}
	if !IsApply(t.Mode) {
		argv = append(argv, t.MaxSaleCents)
	}
	keys := k.txnKeys(t)
	for _, m := range t.Marks {
		// The token key of a key that is no token never exists: marked
		// only where it does, like RunComplete's.
		keys = append(keys, k.Idem(m.Term, m.Key), k.Token(m.Key))
	}
	return lua.RunPipelined(ctx, rdb, txnScript, keys, argv, more)
}

// RunUndo runs txn_undo.lua for t, whose txn.lua run issued flow.
func RunUndo(ctx context.Context, rdb redis.Scripter, k Keys, t Txn, flow string) *redis.Cmd {
	argv := []any{t.Mode, t.Term, t.Fingerprint, t.Tender, t.Total, t.Hour, t.Owner, flow, len(t.Lines)}
	for _, ln := range t.Lines {
		argv = append(argv, ln.Barcode, ln.Qty)
	}
	return undoScript.Run(ctx, rdb, k.txnKeys(t), argv...)
}

// RunComplete runs txn_complete.lua: it marks the record of (term, key)
// COMPLETED, and the payment token key when the key is one (tokenForm),
// only where this Redis holds them (1; 0 when it lacks the record: a
// failover came between the sale and its completion).
func RunComplete(ctx context.Context, rdb redis.Scripter, k Keys, term, key string, tokenForm bool) *redis.Cmd {
	ks := []string{k.Idem(term, key)}
	if tokenForm {
		ks = append(ks, k.Token(key))
	}
	return completeScript.Run(ctx, rdb, ks)
}

// CatalogApply is one run of catalog_apply.lua.
type CatalogApply struct {
	Barcode, Name string
	PriceCents    int64
	Active        bool
	Revision      uint64
	StoreKey      bool // the change is the store's own entry (source "store"), not the chain's ("all")
	Force, Create bool
}

// RunCatalogApply runs catalog_apply.lua for c.
func RunCatalogApply(ctx context.Context, rdb redis.Scripter, k Keys, c CatalogApply) *redis.Cmd {
	src := "all"
	if c.StoreKey {
		src = "store"
	}
	return catalogScript.Run(ctx, rdb, []string{k.Item(c.Barcode)}, c.Name,
		strconv.FormatInt(c.PriceCents, 10), Flag(c.Active), strconv.FormatUint(c.Revision, 10), src, Flag(c.Force), Flag(c.Create))
}

// CatalogEntry is one item's catalog entry as the journal holds it, for
// item_restore.lua's "catalog" mode; Known false: the journal has none.
type CatalogEntry struct {
	Barcode, Name string
	PriceCents    int64
	Active        bool
	Revision      uint64
	Source        string
	Known         bool
}

// RunRestoreCatalog runs item_restore.lua in "catalog" mode over entries.
func RunRestoreCatalog(ctx context.Context, rdb redis.Scripter, k Keys, entries []CatalogEntry) *redis.Cmd {
	keys := make([]string, len(entries))
	args := make([]any, 1, 1+5*len(entries))
	args[0] = "catalog"
	for n, e := range entries {
		keys[n] = k.Item(e.Barcode)
		if !e.Known {
			args = append(args, "", "0", "1", "0", "")
			continue
		}
		args = append(args, e.Name, strconv.FormatInt(e.PriceCents, 10), Flag(e.Active), strconv.FormatUint(e.Revision, 10), e.Source)
	}
	return restoreScript.Run(ctx, rdb, keys, args...)
}

// LostItem is an item Redis lost, as item_restore.lua's "create" mode
// sets it back.
type LostItem struct {
	Barcode, Name     string
	PriceCents, Stock int64
	Active            bool
	Revision          uint64
	Source            string
}

// RunRestoreCreate runs item_restore.lua in "create" mode over items.
func RunRestoreCreate(ctx context.Context, rdb redis.Scripter, k Keys, items []LostItem) *redis.Cmd {
	keys := make([]string, 0, len(items))
	args := []any{"create"}
	for _, it := range items {
		keys = append(keys, k.Item(it.Barcode))
		args = append(args, it.Name, strconv.FormatInt(it.PriceCents, 10), strconv.FormatInt(it.Stock, 10),
			Flag(it.Active), strconv.FormatUint(it.Revision, 10), it.Source)
	}
	return restoreScript.Run(ctx, rdb, keys, args...)
}

// RunStockAdjust runs stock_adjust.lua: delta on barcode's stock, recorded
// under the adjustment's idempotency key with id and fingerprint fp.
func RunStockAdjust(ctx context.Context, rdb redis.Scripter, k Keys, barcode, idemKey string, delta int64, id, fp string, ttlSeconds int64) *redis.Cmd {
	return adjustScript.Run(ctx, rdb, []string{k.Item(barcode), k.Adjustment(idemKey)},
		strconv.FormatInt(delta, 10), id, fp, ttlSeconds)
}

// SnapshotKeys are snapshot.lua's keys: the sequence, then the daily and
// the hourly counters of days, then the items of barcodes; its reply has
// one value per key in that order.
func (k Keys) SnapshotKeys(days, barcodes []string) []string {
	keys := make([]string, 0, 1+2*len(days)+len(barcodes))
	keys = append(keys, k.Seq())
	for _, d := range days {
		keys = append(keys, k.Daily(d))
	}
	for _, d := range days {
		keys = append(keys, k.Hourly(d))
	}
	for _, b := range barcodes {
		keys = append(keys, k.Item(b))
	}
	return keys
}

// RunSnapshot runs snapshot.lua over keys (SnapshotKeys of days).
func RunSnapshot(ctx context.Context, rdb redis.Scripter, keys []string, days int) *redis.Cmd {
	return snapshotScript.Run(ctx, rdb, keys, days)
}

// RunSeqRaise runs seq_raise.lua: the sequence is raised to floor if below.
func RunSeqRaise(ctx context.Context, rdb redis.Scripter, k Keys, floor int64) *redis.Cmd {
	return seqRaiseScript.Run(ctx, rdb, []string{k.Seq()}, floor)
}

// CorrectOp is one operation of correct.lua: its key and four arguments.
type CorrectOp struct {
	Key  string
	Args [4]any
}

// CounterOp adds delta to field of day's daily (or hourly) counters.
func (k Keys) CounterOp(day string, hourly bool, field string, delta int64) CorrectOp {
	key := k.Daily(day)
	if hourly {
		key = k.Hourly(day)
	}
	return CorrectOp{key, [4]any{"counter", field, delta, ""}}
}

// StockOp adds delta to barcode's stock, if Redis holds the item.
func (k Keys) StockOp(barcode string, delta int64) CorrectOp {
	return CorrectOp{k.Item(barcode), [4]any{"stock", "", delta, ""}}
}

// ItemOp sets a lost item back, only while still missing.
func (k Keys) ItemOp(barcode, name string, priceCents, stock int64) CorrectOp {
	return CorrectOp{k.Item(barcode), [4]any{"item", name, strconv.FormatInt(priceCents, 10), stock}}
}

// CatalogOp sets the catalog entry of an item ItemOp set back; it must
// run in the same call as its ItemOp.
func (k Keys) CatalogOp(barcode string, active bool, revision uint64, source string) CorrectOp {
	return CorrectOp{k.Item(barcode), [4]any{"catalog", Flag(active), strconv.FormatUint(revision, 10), source}}
}

// Fenced runs a fenced script (edge/lock's Lock.Run).
type Fenced func(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error)

// RunCorrect runs correct.lua over ops through run, the holder's fence.
func RunCorrect(ctx context.Context, run Fenced, ops []CorrectOp) error {
	keys := make([]string, len(ops))
	args := make([]any, 0, 4*len(ops))
	for i, op := range ops {
		keys[i] = op.Key
		args = append(args, op.Args[:]...)
	}
	_, err := run(ctx, correctScript, keys, args...)
	return err
}

// RateLevel is one sliding window of a rate-limit decision.
type RateLevel struct {
	Key          string // RateStore, RateTerminal, RateAction or RateSync
	Limit        int
	WindowMillis int64
	Scale        string // "" or the action name a promotion's actions list may name
}

// RateCall is a call of ratelimit.lua over fixed levels, built once: its
// keys and the levels' arguments (boxed for go-redis) are shared by every
// decision of one terminal and action; only the member is per request.
// It is read-only after PrepareRate, so safe for concurrent use.
type RateCall struct {
	keys []string
	tail []any // ARGV after the member
}

// PrepareRate builds the call of ratelimit.lua over lv.
func PrepareRate(k Keys, lv []RateLevel) RateCall {
	c := RateCall{keys: make([]string, 0, len(lv)+1), tail: make([]any, 0, 3*len(lv))}
	c.keys = append(c.keys, k.Promo())
	for _, v := range lv {
		c.keys = append(c.keys, v.Key)
		c.tail = append(c.tail, v.Limit, v.WindowMillis, v.Scale)
	}
	return c
}

// RunRateLimit runs ratelimit.lua over lv, charging member. With read, the
// script and read's commands go in one round trip (lua.RunPipelined,
// which handles a NOSCRIPT inside the pipeline as Script.Run does outside
// one), and the reply is that of read's last attempt.
func RunRateLimit(ctx context.Context, rdb redis.UniversalClient, k Keys, member string, lv []RateLevel, read Read) ([]int64, Reply, error) {
	return PrepareRate(k, lv).Run(ctx, rdb, member, read)
}

// Run is RunRateLimit of the prepared levels.
func (c RateCall) Run(ctx context.Context, rdb redis.UniversalClient, member string, read Read) ([]int64, Reply, error) {
	args := make([]any, 1+len(c.tail))
	args[0] = member
	copy(args[1:], c.tail)
	if read == nil {
		res, err := rateScript.Run(ctx, rdb, c.keys, args...).Int64Slice()
		return res, Reply{}, err
	}
	var last redis.Cmder
	cmd := lua.RunPipelined(ctx, rdb, rateScript, c.keys, args, func(p redis.Pipeliner) { last = read(ctx, p) })
	res, err := cmd.Int64Slice()
	return res, Reply{c: last}, err
}

// RunLockAcquire runs lock_acquire.lua: the lock at key for ttlMillis
// with token; the reply is the new fencing number, 0 when held.
func RunLockAcquire(ctx context.Context, rdb redis.Scripter, key, token string, ttlMillis int64) *redis.Cmd {
	return acquireScript.Run(ctx, rdb, []string{key, Fence(key)}, token, ttlMillis)
}

// RunLockExtend runs lock_extend.lua (compare-and-extend); 0 when lost.
func RunLockExtend(ctx context.Context, rdb redis.Scripter, key, token string, ttlMillis int64) *redis.Cmd {
	return extendScript.Run(ctx, rdb, []string{key}, token, ttlMillis)
}

// RunLockRelease runs lock_release.lua (compare-and-delete); 0 when lost.
func RunLockRelease(ctx context.Context, rdb redis.Scripter, key, token string) *redis.Cmd {
	return releaseScript.Run(ctx, rdb, []string{key}, token)
}

// RunFenced runs the fenced script s with keys and args under the fence
// of the lock at lockKey held with fencing number fence: KEYS[1] is the
// fence counter and ARGV[1] the number, before s's own.
func RunFenced(ctx context.Context, rdb redis.Scripter, s *redis.Script, lockKey string, fence int64, keys []string, args ...any) *redis.Cmd {
	ks := append([]string{Fence(lockKey)}, keys...)
	as := append([]any{strconv.FormatInt(fence, 10)}, args...)
	return s.Run(ctx, rdb, ks, as...)
}

func boolArg(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Flag is a boolean as the scripts and the item hash take it: "1" or "0".
func Flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
