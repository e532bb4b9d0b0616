package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/lock"
	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/offline/journal"
)

// What the daily reconciliation (edge/reconcile) reads from and writes to
// Redis: operations on the store's counters, stock and job lock, never
// key names, which stay edge/redisdb's.

// bulkTimeout bounds one snapshot or one chunk of corrections: a single
// script over hundreds of keys, slower than a request's RedisTimeout.
const bulkTimeout = 5 * time.Second

// correctChunk is how many corrections one script runs: small enough that
// Redis, single-threaded, never stalls sales for long.
const correctChunk = 250

// Snapshot is what Redis holds of the days and items asked, read in one
// atomic step: the counters and stock then hold exactly the transactions
// numbered up to Seq (plus degraded ones applied before).
type Snapshot struct {
	Seq int64 // the flow sequence
	// Daily and Hourly map each day asked to its counter fields, as
	// txn.lua writes them (see ExpectedCounters); anything else a hash
	// holds is left out.
	Daily, Hourly map[string]map[string]int64
	// Stock maps each barcode asked to its stock; a barcode Redis lacks
	// (or whose item has no stock field) is absent.
	Stock map[string]int64
}

// Snapshot reads the flow sequence, the counters of days and the stock of
// barcodes in one script.
func (l *Ledger) Snapshot(ctx context.Context, days, barcodes []string) (*Snapshot, error) {
	keys := l.k.SnapshotKeys(days, barcodes)
	ctx, cancel := context.WithTimeout(ctx, bulkTimeout)
	defer cancel()
	res, err := redisdb.RunSnapshot(ctx, l.rdb, keys, len(days)).Slice()
	if err != nil {
		return nil, fmt.Errorf("snapshot redis counters and stock: %w", err)
	}
	if len(res) != len(keys) {
		return nil, fmt.Errorf("snapshot redis counters and stock: %d values for %d keys", len(res), len(keys))
	}
	s := &Snapshot{Daily: make(map[string]map[string]int64, len(days)), Hourly: make(map[string]map[string]int64, len(days)),
		Stock: make(map[string]int64, len(barcodes))}
	s.Seq, _ = strconv.ParseInt(replyString(res[0]), 10, 64)
	for i, d := range days {
		s.Daily[d] = replyCounters(res[1+i], isDailyCounter)
		s.Hourly[d] = replyCounters(res[1+len(days)+i], isHourlyCounter)
	}
	for i, b := range barcodes {
		v := res[1+2*len(days)+i]
		if v == nil {
			continue
		}
		n, err := strconv.ParseInt(replyString(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("item %s: stock %q in redis is not a number", b, replyString(v))
		}
		s.Stock[b] = n
	}
	return s, nil
}

// replyCounters is the counter fields of an HGETALL reply that hold
// integers.
func replyCounters(v any, counter func(field string) bool) map[string]int64 {
	flat, _ := v.([]any)
	m := make(map[string]int64, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		f := replyString(flat[i])
		if !counter(f) {
			continue
		}
		if n, err := strconv.ParseInt(replyString(flat[i+1]), 10, 64); err == nil {
			m[f] = n
		}
	}
	return m
}

// The counter fields txn.lua writes in a business day's hashes:
//
//	daily   t:<terminal>:<counter> and x:<tender>:<counter>
//	hourly  <HH>:<counter>
//
// where <counter> is sales, sales_cents, refunds or refund_cents.
var counterNames = map[string]bool{"sales": true, "sales_cents": true, "refunds": true, "refund_cents": true}

func isDailyCounter(f string) bool {
	p := strings.Split(f, ":")
	return len(p) == 3 && (p[0] == "t" || p[0] == "x") && counterNames[p[2]]
}

func isHourlyCounter(f string) bool {
	h, c, ok := strings.Cut(f, ":")
	return ok && len(h) == 2 && h >= "00" && h <= "23" && counterNames[c]
}

// ExpectedCounters are the daily and hourly counter fields Redis should
// hold for a day whose journaled totals are rows.
func ExpectedCounters(rows []journal.DayRow) (daily, hourly map[string]int64) {
	daily, hourly = map[string]int64{}, map[string]int64{}
	add := func(m map[string]int64, prefix string, t journal.DayTotals) {
		m[prefix+"sales"] += t.Sales
		m[prefix+"sales_cents"] += t.SalesCents
		m[prefix+"refunds"] += t.Refunds
		m[prefix+"refund_cents"] += t.RefundCents
	}
	for _, row := range rows {
		add(daily, "t:"+row.TerminalID+":", row.Totals)
		add(daily, "x:"+row.Tender+":", row.Totals)
		add(hourly, row.Hour+":", row.Totals)
	}
	return daily, hourly
}

func replyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// Corrections bring Redis in line with the journal. Counter and stock
// corrections are deltas, so sales made meanwhile are kept.
type Corrections struct {
	Counters []CounterDelta
	Stock    []StockDelta
	// Restore are items Redis lost, set back (with their expected stock
	// and HQ's catalog entry) only while still missing.
	Restore []RestoredItem
}

// RestoredItem is an item Redis lost as the journal holds it: with the
// stock it expects and the catalog entry the item last took.
type RestoredItem struct {
	Item
	Active   bool
	Revision uint64 // 0: the item never came from HQ's catalog
	Source   string // store | all
}

// CounterDelta adds Delta to one field of a day's daily (or hourly)
// counters.
type CounterDelta struct {
	Day    string
	Hourly bool
	Field  string
	Delta  int64
}

// StockDelta adds Delta to an item's stock, if Redis holds the item.
type StockDelta struct {
	Barcode string
	Delta   int64
}

// Len is the number of corrections.
func (c Corrections) Len() int { return len(c.Counters) + len(c.Stock) + len(c.Restore) }

// Correct applies c under the fence of lk, the job lock's holder
// (JobLock), in chunks: a holder whose lock another took since writes
// nothing more (lock.ErrFenced). It returns how many corrections were
// applied, all of them unless an error says otherwise.
func (l *Ledger) Correct(ctx context.Context, lk *lock.Lock, c Corrections) (int, error) {
	ops := make([]redisdb.CorrectOp, 0, c.Len())
	for _, d := range c.Counters {
		ops = append(ops, l.k.CounterOp(d.Day, d.Hourly, d.Field, d.Delta))
	}
	for _, s := range c.Stock {
		ops = append(ops, l.k.StockOp(s.Barcode, s.Delta))
	}
	paired := map[int]bool{} // a 'catalog' op, never split from its 'item'
	for _, it := range c.Restore {
		ops = append(ops, l.k.ItemOp(it.Barcode, it.Name, it.PriceCents, it.Stock))
		if it.Revision > 0 {
			paired[len(ops)] = true
			ops = append(ops, l.k.CatalogOp(it.Barcode, it.Active, it.Revision, it.Source))
		}
	}
	done := 0
	for i := 0; i < len(ops); {
		j := min(i+correctChunk, len(ops))
		if paired[j] {
			j++
		}
		cctx, cancel := context.WithTimeout(ctx, bulkTimeout)
		err := redisdb.RunCorrect(cctx, lk.Run, ops[i:j])
		cancel()
		if err != nil {
			return done, fmt.Errorf("correct redis from the journal: %w", err)
		}
		for ; i < j; i++ {
			if !paired[i] {
				done++
			}
		}
	}
	return done, nil
}

// JobLock is the store-wide lock of a singleton job (e.g. "reconcile"):
// one holder at a time among every daemon sharing the store's Redis.
func (l *Ledger) JobLock(job string) lock.Named { return lock.NewNamed(l.rdb, l.k.Lock(job)) }

// HasDayCounters reports whether Redis counts sales of day.
func (l *Ledger) HasDayCounters(ctx context.Context, day string) (bool, error) {
	n, err := l.rdb.Exists(ctx, l.k.Daily(day)).Result()
	if err != nil {
		return false, fmt.Errorf("read the counters of %s: %w", day, err)
	}
	return n > 0, nil
}

// Day is the business day of t in the store's time zone (YYYYMMDD).
func (l *Ledger) Day(t time.Time) string { return businessday.Of(t, l.cfg.Location) }

// Location is the store's time zone.
func (l *Ledger) Location() *time.Location { return l.cfg.Location }

// MasterRunID identifies the Redis process serving as master now.
func (l *Ledger) MasterRunID(ctx context.Context) (string, error) { return l.masterRunID(ctx) }

// PeerSeen reports whether another daemon pinged the store's Redis last
// (each daemon writes its instance id there every Watch tick): two
// daemons share this Redis, and this one's journal holds only its own
// sales. Ping first, then sample it over a while.
func (l *Ledger) PeerSeen(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	v, err := l.rdb.Get(ctx, l.k.Alive()).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return v != l.owner, nil
}

// Pending is a sale or refund whose effects Redis holds but the journal
// does not (yet): in flight between the script and the journal commit,
// or left by a crash or a failed journal write until it is recovered.
type Pending struct {
	FlowNo   string
	Day      string
	Barcodes []string
}

// Unjournaled scans Redis's idempotency records for transactions still
// PROCESSING that the journal lacks (by the page: eachProcessing).
func (l *Ledger) Unjournaled(ctx context.Context) ([]Pending, error) {
	var out []Pending
	err := l.eachProcessing(ctx, func(r processingRecord) error {
		term, idem, ok := l.k.IdemOf(r.key)
		if !ok {
			return nil
		}
		if t, err := l.j.ByKey(ctx, term, idem); err != nil {
			return err
		} else if t != nil {
			return nil
		}
		m, err := l.rdb.HMGet(ctx, r.key, "state", "body", "rz", "flow_no").Result()
		if err != nil {
			return fmt.Errorf("read %s: %w", r.key, err)
		}
		if state, _ := m[0].(string); state != "PROCESSING" {
			return nil // completed since the scan read it
		}
		var b body
		old, _ := m[1].(string)
		rz, _ := m[2].(string)
		flow, _ := m[3].(string)
		raw, err := recordBody(flow, old, rz)
		if err != nil {
			return err
		}
		_ = json.Unmarshal(raw, &b)
		p := Pending{FlowNo: b.FlowNo}
		if at, err := time.Parse(time.RFC3339Nano, b.OccurredAt); err == nil {
			p.Day = l.Day(at)
		}
		for _, ln := range b.Lines {
			p.Barcodes = append(p.Barcodes, ln.Barcode)
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
