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

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/offline/journal"
)

// Start-up and failover repair: Redis may have lost writes (a crash, a
// restart, a Sentinel failover); the journal has them all.

// ReapplyWindow is how far back a Redis that lost writes is repaired from
// the journal: far more than Sentinel failover or an AOF fsynced every
// second can lose.
const ReapplyWindow = 10 * time.Minute

// ReapplyRecent re-applies to Redis every transaction journaled since
// since whose effects Redis lacks (its idempotency record is gone: a
// failover or restart lost the write). Those Redis still has are skipped
// by the script, so running it is always safe. It returns how many it
// had to apply.
func (l *Ledger) ReapplyRecent(ctx context.Context, since time.Time) (int, error) {
	return l.reapplyFrom(ctx, since, 0)
}

// reapplyFrom is ReapplyRecent of the rows after row id after. Each page
// done moves the resume mark (reapplyMark) to its last row, so a repair
// cut off by the next fault resumes where it stopped instead of walking
// the whole window again (issue 21: under recurring faults the repair
// never finished).
func (l *Ledger) reapplyFrom(ctx context.Context, since time.Time, after int64) (int, error) {
	applied := 0
	for {
		keys, err := l.j.AppliedKeysSince(ctx, since, after, reapplyPage)
		if err != nil {
			return applied, err
		}
		if len(keys) == 0 {
			return applied, nil
		}
		after = keys[len(keys)-1].RowID
		lacking, unmarked, err := l.lackedRows(ctx, keys)
		if err != nil {
			return applied, err
		}
		if len(unmarked) > 0 {
			l.completeAll(unmarked)
			l.log.Info("journaled transactions still PROCESSING in redis marked completed", "count", len(unmarked))
		}
		txns, err := l.j.TxnsAt(ctx, lacking)
		if err != nil {
			return applied, err
		}
		for _, t := range txns {
			ok, err := l.applyJournaled(ctx, t)
			if err != nil {
				if err := l.setAside(ctx, t, err); err != nil {
					return applied, err
				}
				continue
			}
			if ok {
				applied++
				l.log.Warn("redis lacked a journaled transaction; applied it again", "flow_no", t.FlowNo)
			}
		}
		if err := l.setReapplyMark(ctx, after); err != nil {
			return applied, err
		}
	}
}

// reapplyPage is how many journal rows the re-apply checks against Redis
// in one round trip.
const reapplyPage = 500

// lackedRows are the row ids of keys whose idempotency record this Redis
// lacks, asked in one pipelined round trip: a failover's new master holds
// nearly all of them, and running the apply script for each (which skips
// it, "exists") cost one round trip and a journal read per row, tens of
// seconds over a busy store's ten-minute window while the tills waited in
// degraded mode. The script still decides for the rows returned.
//
// unmarked are the keys whose record is still PROCESSING: journaled here,
// so their COMPLETED mark (best effort, written after the journal commit)
// was lost, most often by the failover this repair follows. Left so, a
// till's retry on the store's other daemon would journal the sale there
// too once the record is 5 s old (existing); the caller marks them.
func (l *Ledger) lackedRows(ctx context.Context, keys []journal.RowKey) (lacking []int64, unmarked []completion, err error) {
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	cmds, err := l.rdb.Pipelined(rctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			// What txn.lua reads to answer "exists": the record's state.
			p.HMGet(rctx, l.k.Idem(k.TerminalID, k.IdemKey), "state")
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("ask redis which journaled transactions it holds: %w", err)
	}
	for i, c := range cmds {
		v := c.(*redis.SliceCmd).Val()
		if len(v) != 1 || v[0] == nil {
			lacking = append(lacking, keys[i].RowID)
		} else if state, _ := v[0].(string); state == "PROCESSING" {
			unmarked = append(unmarked, completion{term: keys[i].TerminalID, key: keys[i].IdemKey})
		}
	}
	return lacking, unmarked, nil
}

// The resume mark of the re-apply (key reapplied, one per node: row ids
// are the node's own journal's) says "this Redis holds every applied
// journal row up to row id R": written to Redis after the scripts of the
// rows it covers had answered, so it travels with them. A replica
// promoted by a failover, or a master restarted from its AOF, holds a
// prefix of the old master's writes: whatever mark it holds, it holds the
// rows under it too. A FLUSHALL removes it (the walk starts over). Its
// value "R:flow" names row R's flow number, so the mark of another journal
// (a new one, a restored backup whose row ids differ) is not taken.
//
// The one write that can land after the mark and under it is a degraded
// row applied late (its row id is older than the walk's last). Before
// degraded rows are applied, the mark is lowered below the first of them
// (lowerReapplyMark), so a failover that loses such an apply is caught by
// the next walk.

// reapplyResume is the row id the re-apply may resume after: the mark's,
// when it names a row of this journal; 0 (the whole window) otherwise.
func (l *Ledger) reapplyResume(ctx context.Context) int64 {
	id, flow, ok := l.readReapplyMark(ctx)
	if !ok {
		return 0
	}
	got, err := l.j.RowIDOf(ctx, flow)
	if err != nil || got != id {
		return 0
	}
	return id
}

func (l *Ledger) readReapplyMark(ctx context.Context) (int64, string, bool) {
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	v, err := l.rdb.Get(rctx, l.k.Reapplied(l.cfg.NodeID)).Result()
	if err != nil {
		return 0, "", false
	}
	idStr, flow, ok := strings.Cut(v, ":")
	id, err := strconv.ParseInt(idStr, 10, 64)
	if !ok || err != nil || id <= 0 {
		return 0, "", false
	}
	return id, flow, true
}

// setReapplyMark moves the mark to the journal's row at or before rowID
// (removes it when there is none).
func (l *Ledger) setReapplyMark(ctx context.Context, rowID int64) error {
	id, flow, err := l.j.RowAtOrBefore(ctx, rowID)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	if id == 0 {
		err = l.rdb.Del(rctx, l.k.Reapplied(l.cfg.NodeID)).Err()
	} else {
		err = l.rdb.Set(rctx, l.k.Reapplied(l.cfg.NodeID), strconv.FormatInt(id, 10)+":"+flow, 0).Err()
	}
	if err != nil {
		return fmt.Errorf("move the re-apply mark: %w", err)
	}
	return nil
}

// lowerReapplyMark puts the mark below the first row waiting to be
// applied, before any of them is: see the mark's comment above.
func (l *Ledger) lowerReapplyMark(ctx context.Context) error {
	first, err := l.j.MinUnappliedRowID(ctx)
	if err != nil || first == 0 {
		return err
	}
	if id, _, ok := l.readReapplyMark(ctx); !ok || id < first {
		return nil
	}
	return l.setReapplyMark(ctx, first-1)
}

// applyJournaled runs txn.lua in apply mode for a journaled transaction;
// true when Redis lacked it and now has it.
func (l *Ledger) applyJournaled(ctx context.Context, t journal.Txn) (bool, error) {
	prefix := `{"flow_no":"` + t.FlowNo + `",`
	a := txnArgs{mode: "apply_" + t.Kind, term: t.TerminalID, key: t.IdemKey, fp: t.Fingerprint, tender: t.Tender,
		day: t.BusinessDay, hour: t.BusinessHour, total: t.TotalCents, bodyRest: strings.TrimPrefix(string(t.Body), prefix),
		flow: t.FlowNo, refundOf: t.OriginalFlowNo}
	for _, ln := range t.Lines {
		a.lines = append(a.lines, scriptLine{barcode: ln.Barcode, qty: ln.Qty})
	}
	res, err := l.run(ctx, a)
	if err != nil {
		return false, fmt.Errorf("apply %s: %w", t.FlowNo, err)
	}
	switch tag, _ := res[0].(string); tag {
	case "ok":
		if n, _ := res[2].(int64); n > 0 {
			l.metrics.negativeStock.Add(float64(n))
		}
		return true, nil
	case "exists":
		return false, nil // applied before: its record is there
	default:
		// The script checks everything before its first write: a refusal
		// changed nothing, and will refuse again on every retry.
		return false, &unappliableError{flow: t.FlowNo, reason: fmt.Sprintf("txn.lua refused it: %v", res)}
	}
}

// unappliableError is a journaled transaction Redis refuses for good
// (a script refusal or error on its data), not for an outage.
type unappliableError struct{ flow, reason string }

func (e *unappliableError) Error() string { return "apply " + e.flow + ": " + e.reason }

// setAside handles an error applying a journaled transaction: an outage
// (or the caller giving up) stops the caller, which retries later; any
// other error would fail on every retry, so the transaction is set aside
// in the journal (posedge journal quarantine list|retry) and counted,
// and the ones behind it go on.
func (l *Ledger) setAside(ctx context.Context, t journal.Txn, err error) error {
	var ue *unappliableError
	reason := err.Error()
	switch {
	case ctx.Err() != nil:
		return err
	case errors.As(err, &ue):
		reason = ue.reason
	case outage(ctx, err):
		return err
	}
	if jerr := l.j.SetUnappliable(ctx, t.FlowNo, reason); jerr != nil {
		return fmt.Errorf("set aside %s after %v: %w", t.FlowNo, err, jerr)
	}
	l.metrics.unappliable.Inc()
	l.log.Error("redis cannot apply a journaled transaction: set aside, see posedge journal quarantine list",
		"flow_no", t.FlowNo, "kind", t.Kind, "total_cents", t.TotalCents, "reason", reason)
	return nil
}

// ApplyDegraded applies journaled degraded-mode transactions to Redis
// (stock, counters, idempotency record), each exactly once: txn.lua skips
// a transaction whose record already exists. It returns how many it
// applied; it stops at the first Redis outage. One Redis refuses for
// another reason is set aside (see setAside) and never blocks the rest.
func (l *Ledger) ApplyDegraded(ctx context.Context) (int, error) {
	return l.applyDegraded(ctx, 0)
}

// applyDegraded is ApplyDegraded stopping once it has gone through limit
// rows (0: none left). Rows are taken oldest first, so a limit of the
// count at the start covers exactly the rows waiting then, however fast
// degraded sales keep arriving behind them.
func (l *Ledger) applyDegraded(ctx context.Context, limit int) (int, error) {
	applied, seen := 0, 0
	for limit <= 0 || seen < limit {
		batch := 100
		if limit > 0 {
			batch = min(batch, limit-seen)
		}
		txns, err := l.j.Unapplied(ctx, batch)
		if err != nil {
			return applied, err
		}
		if len(txns) == 0 {
			return applied, nil
		}
		// Marked applied once per batch (one journal commit, not one per
		// row): a crash before the mark leaves rows Redis holds, which the
		// next pass finds "exists" and skips.
		var done []string
		for _, t := range txns {
			ok, err := l.applyJournaled(ctx, t)
			if err != nil {
				if err := l.setAside(ctx, t, err); err != nil {
					_ = l.j.MarkApplied(context.WithoutCancel(ctx), done...)
					return applied, err
				}
				continue
			}
			if ok {
				applied++
			}
			done = append(done, t.FlowNo)
		}
		if err := l.j.MarkApplied(ctx, done...); err != nil {
			return applied, err
		}
		seen += len(txns)
	}
	return applied, nil
}

// handOverRows is how many degraded rows may be left for the hand-over,
// which applies them while sales wait on the mode lock.
const handOverRows = 200

// catchUpPasses bounds the passes catchUpDegraded makes before it leaves
// the rest to the hand-over.
const catchUpPasses = 8

// catchUpDegraded applies the degraded rows while sales go on beside it,
// in passes each bounded by the rows waiting at its start, until few are
// left, the backlog stops shrinking (degraded sales arriving as fast as
// they are applied) or catchUpPasses are done. An unbounded pass would
// chase a backlog tills keep growing and never end: normal mode would
// never come back (seen in the bench's failover, eight tills selling as
// fast as they were answered).
func (l *Ledger) catchUpDegraded(ctx context.Context) (int, error) {
	applied, prev := 0, -1
	for range catchUpPasses {
		n, err := l.j.CountUnapplied(ctx)
		if err != nil {
			return applied, err
		}
		if n <= handOverRows || (prev >= 0 && n >= prev) {
			return applied, nil
		}
		prev = n
		k, err := l.applyDegraded(ctx, n)
		applied += k
		if err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// RecoverOrphans finds sales whose effects and result a crashed daemon
// left in Redis (state PROCESSING, a dead owner: orphaned) without a
// journal row, and journals them as they are, marked recovered. Run at
// start, before /readyz turns 200.
func (l *Ledger) RecoverOrphans(ctx context.Context) (int, error) {
	found := 0
	err := l.eachProcessing(ctx, func(r processingRecord) error {
		if !l.orphaned(r) {
			return nil
		}
		ok, err := l.recoverOrphan(ctx, r)
		if ok {
			found++
		}
		return err
	})
	return found, err
}

// orphaned tells whether a PROCESSING record is this node's to recover:
// a dead process's of this node. Not this instance's own; this node's
// under another owner is (a node runs one process at a time, so it is an
// earlier one that died). Another node's (two daemons on one Redis) never
// is: it may be a sale that daemon has in flight, or one it journaled
// whose COMPLETED mark was lost (the mark is best effort), which this
// node's journal would then hold too; that node's own scan recovers its
// records, and a till's retry here still does (existing). An owner that
// names no node (written before owners did) is taken as dead, as it
// always was.
func (l *Ledger) orphaned(r processingRecord) bool {
	if r.owner == l.owner {
		return false
	}
	return !l.otherNode(r.owner)
}

// processingRecord is an idempotency record in state PROCESSING, as
// eachProcessing reads it.
type processingRecord struct {
	key   string
	owner string
}

// eachProcessing calls fn with each idempotency record in state
// PROCESSING. Redis holds a record per sale of the last IdemTTL, nearly
// all COMPLETED: each SCAN page's records are read (state, owner) in
// one pipelined round trip. One read per record held a restarted daemon
// in degraded mode for seconds per ten thousand sales (the kill loop's
// eighth restart, 30,000 records on a loaded machine, outlasted its 30 s
// readiness wait).
//
// No RedisTimeout of its own: the client's read timeout bounds each
// read, and a page-wide bound as short as a request's could fail the
// start-up on a busy router and keep the tills in degraded mode.
func (l *Ledger) eachProcessing(ctx context.Context, fn func(processingRecord) error) error {
	var cursor uint64
	for {
		keys, next, err := l.rdb.Scan(ctx, cursor, l.k.IdemScan(), idemScanPage).Result()
		if err != nil {
			return fmt.Errorf("scan the idempotency records: %w", err)
		}
		recs, err := l.processingAmong(ctx, keys)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// idemScanPage is the COUNT hint of eachProcessing's scan: the records
// one pipeline reads.
const idemScanPage = 500

// processingAmong reads the records of keys in one pipeline and returns
// those in state PROCESSING.
func (l *Ledger) processingAmong(ctx context.Context, keys []string) ([]processingRecord, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(keys))
	for i, key := range keys {
		cmds[i] = pipe.HMGet(ctx, key, "state", "owner")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read the state of %d idempotency records: %w", len(keys), err)
	}
	var out []processingRecord
	for i, cmd := range cmds {
		v := cmd.Val()
		if len(v) != 2 {
			continue
		}
		if state, _ := v[0].(string); state != "PROCESSING" {
			continue
		}
		owner, _ := v[1].(string)
		out = append(out, processingRecord{key: keys[i], owner: owner})
	}
	return out, nil
}

// recoverOrphan journals the sale of one orphaned record (or completes
// it when the journal holds its key after all); ok when it journaled it.
func (l *Ledger) recoverOrphan(ctx context.Context, r processingRecord) (ok bool, err error) {
	key := r.key
	m, err := l.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	// Read again: the record may have completed, expired or been taken
	// by another script since the scan.
	if m["state"] != "PROCESSING" || m["owner"] != r.owner {
		return false, nil
	}
	term, idem, ok := l.k.IdemOf(key)
	if !ok {
		return false, nil
	}
	if t, err := l.j.ByKey(ctx, term, idem); err != nil {
		return false, err
	} else if t != nil {
		l.complete(ctx, term, idem)
		return false, nil
	}
	raw, err := recordBody(m["flow_no"], m["body"], m["rz"])
	if err != nil {
		l.log.Warn("orphaned record with an unreadable result; left alone", "key", key, "err", err)
		return false, nil
	}
	var b body
	_ = json.Unmarshal(raw, &b)
	t := journal.Txn{TerminalID: term, IdemKey: idem, Fingerprint: m["fp"], Kind: b.Kind, Tender: b.Tender,
		TotalCents: b.TotalCents, OriginalFlowNo: b.OriginalFlowNo, CreatedAt: time.Now(), Lines: jlines(b.Lines)}
	if t.Kind == "" {
		return false, nil
	}
	// A till's retry of the key may journal it first (the listener
	// serves before the scan ends): then this scan did not.
	if ok, err := l.journalStored(ctx, t, m["flow_no"], raw); err != nil || !ok {
		return false, err
	}
	l.log.Warn("journaled a sale a crash left only in redis", "terminal", term, "flow_no", m["flow_no"])
	return true, nil
}

// RaiseSequence moves Redis's flow sequence past the journal's highest
// number (after a failover that lost acknowledged INCRs).
func (l *Ledger) RaiseSequence(ctx context.Context) error {
	floor, err := l.j.MaxSeq(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	return redisdb.RunSeqRaise(ctx, l.rdb, l.k, floor).Err()
}

// Repair brings Redis in line with the journal after it may have lost
// writes: the flow sequence is raised past the journal's, recent journaled
// transactions Redis lacks are applied again, degraded ones applied once,
// the item master restored (RestoreItems).
func (l *Ledger) Repair(ctx context.Context) error {
	id, err := l.masterRunID(ctx)
	if err != nil {
		return fmt.Errorf("identify the redis master: %w", err)
	}
	return l.repair(ctx, id, true, l.ApplyDegraded)
}

// repair is Repair of the master runID (read before it starts, so that a
// failover during the repair leaves a mark that names the old master and
// the next repair re-applies). reapply re-applies the recent journaled
// transactions; Start skips it when the master is the one the last
// repair marked (a daemon restart loses nothing in Redis, and re-applying
// ten minutes of sales one script each held a restarted daemon out of
// normal mode for tens of seconds). applyDegraded applies the degraded
// rows: Watch and Start pass catchUpDegraded, since the hand-over after
// them applies the last rows under the mode lock.
func (l *Ledger) repair(ctx context.Context, runID string, reapply bool, applyDegraded func(context.Context) (int, error)) error {
	if err := l.RaiseSequence(ctx); err != nil {
		return fmt.Errorf("raise flow sequence: %w", err)
	}
	if reapply {
		after := l.reapplyResume(ctx)
		if after > 0 {
			l.log.Info("re-apply of recent transactions resumes from its mark", "after_row", after)
		}
		if _, err := l.reapplyFrom(ctx, l.now().Add(-ReapplyWindow), after); err != nil {
			return fmt.Errorf("re-apply recent transactions: %w", err)
		}
	}
	if err := l.lowerReapplyMark(ctx); err != nil {
		return fmt.Errorf("lower the re-apply mark below the degraded rows: %w", err)
	}
	if n, err := applyDegraded(ctx); err != nil {
		return fmt.Errorf("apply degraded transactions: %w", err)
	} else if n > 0 {
		l.log.Info("applied degraded transactions to redis", "count", n)
	}
	// Items last: the transactions applied again above skip the stock of
	// items Redis lacks, and the stock an item is made with counts them.
	applied, created, err := l.RestoreItems(ctx)
	if err != nil {
		return fmt.Errorf("restore the item master: %w", err)
	}
	if applied > 0 {
		l.log.Warn("redis lacked catalog changes the journal holds; applied them again", "count", applied)
	}
	if created > 0 {
		l.log.Warn("redis lacked items the journal holds; restored them with the journal's stock", "count", created)
	}
	// The mark a FLUSHALL (or any loss that keeps the master) removes:
	// Watch repairs again when it is gone.
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	if err := l.rdb.Set(ctx, l.k.Repaired(), runID, 0).Err(); err != nil {
		return fmt.Errorf("mark redis repaired: %w", err)
	}
	return nil
}

// lostData tells whether Redis lost what the last repair left (its mark
// is gone: a FLUSHALL, a restart without persistence) or a catalog change
// found an item missing since.
func (l *Ledger) lostData(ctx context.Context) (bool, error) {
	if l.repairWanted.Swap(false) {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	n, err := l.rdb.Exists(ctx, l.k.Repaired()).Result()
	return n == 0, err
}

// masterRunID identifies the Redis process serving as master: it changes
// with a failover or a restart, both of which may lose recent writes.
func (l *Ledger) masterRunID(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	info, err := l.rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("INFO server without run_id")
}

// FailoverSettle is how long after a master change Watch re-applies the
// recent journal once more (docs/durability.md, split brain).
const FailoverSettle = 10 * time.Second

// Watch keeps degraded mode in step with Redis. Every interval it checks
// that the master takes writes; on failure it enters degraded mode. When
// the master answers again, or a different master answers (failover,
// restart), it repairs Redis from the journal and only then leaves
// degraded mode.
func (l *Ledger) Watch(ctx context.Context, every time.Duration, knownRunID string) {
	t := time.NewTicker(every)
	defer t.Stop()
	runID := knownRunID
	// settle: when, after a master change, to re-apply once more. In a
	// split brain the old master, cut off from the sentinels but not from
	// posedge, keeps taking sales on the client's pooled connections
	// until the client follows the switch (0.8 s in TestRedisSplitBrain):
	// those sales are journaled, then lost when the old master is made a
	// replica, and the repair that followed the change ran before them.
	var settle time.Time
	for {
		err := l.Ping(ctx)
		var id string
		lost := false
		if err == nil {
			id, err = l.masterRunID(ctx)
		}
		if err == nil {
			lost, err = l.lostData(ctx)
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			l.SetRedisDown(true)
		case id != runID || lost || l.Degraded() || l.hasUnapplied(ctx) || !settle.IsZero() && time.Now().After(settle):
			changed := id != runID && runID != ""
			settled := !changed && !settle.IsZero() && time.Now().After(settle)
			if changed {
				l.log.Warn("redis master changed (failover or restart): repairing it from the journal", "run_id", id)
				l.metrics.failovers.Inc()
				settle = time.Now().Add(FailoverSettle)
			} else if settled {
				l.log.Info("re-applying the journal once more after the master change (writes a cut-off old master took meanwhile)")
			} else if lost && runID != "" {
				l.log.Warn("redis lost data without a master change (FLUSHALL?): repairing it from the journal")
			}
			if err := l.repair(ctx, id, true, l.catchUpDegraded); err != nil {
				if lost {
					l.repairWanted.Store(true)
				}
				l.log.Warn("repair redis from the journal", "err", err)
				break
			}
			if err := l.handOver(ctx); err != nil {
				l.log.Warn("hand over to redis", "err", err)
				break
			}
			runID = id
			if settled {
				settle = time.Time{}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Start runs the start-up recovery: sales a crash left in Redis only are
// journaled, then Redis is repaired from the journal. It returns the
// master's run id for Watch, or an error when Redis is unreachable (the
// daemon then starts degraded and Watch repairs later).
func (l *Ledger) Start(ctx context.Context) (string, error) {
	if err := l.Ping(ctx); err != nil {
		l.SetRedisDown(true)
		return "", err
	}
	id, err := l.masterRunID(ctx)
	if err != nil {
		l.SetRedisDown(true)
		return "", err
	}
	if n, err := l.RecoverOrphans(ctx); err != nil {
		return "", fmt.Errorf("recovery scan: %w", err)
	} else if n > 0 {
		l.log.Warn("journaled sales a crash left in redis only", "count", n)
	}
	if err := l.repair(ctx, id, !l.markedRepaired(ctx, id), l.catchUpDegraded); err != nil {
		l.SetRedisDown(true)
		return "", err
	}
	if err := l.handOver(ctx); err != nil {
		return "", fmt.Errorf("hand over to redis: %w", err)
	}
	return id, nil
}

// markedRepaired tells whether the last repair's mark names master
// runID: the same Redis process, holding every write the last repair and
// the sales since left (any doubt, an error included, is "no").
func (l *Ledger) markedRepaired(ctx context.Context, runID string) bool {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	v, err := l.rdb.Get(ctx, l.k.Repaired()).Result()
	return err == nil && runID != "" && v == runID
}

func (l *Ledger) hasUnapplied(ctx context.Context) bool {
	has, err := l.j.HasUnapplied(ctx)
	return err == nil && has
}

// Unappliable lists the journaled transactions set aside because Redis
// refused to apply them (see setAside), with the reasons.
func (l *Ledger) Unappliable(ctx context.Context) ([]journal.UnappliableRow, error) {
	rows, err := l.j.Unappliable(ctx)
	if err != nil {
		return nil, errJournal(err)
	}
	return rows, nil
}

// RetryUnappliable puts set-aside transactions (all when none are named)
// back among those waiting for Redis: Watch applies them at its next tick,
// or sets them aside again if Redis still refuses. It returns how many.
func (l *Ledger) RetryUnappliable(ctx context.Context, flowNos ...string) (int, error) {
	n, err := l.j.RetryUnappliable(ctx, flowNos...)
	if err != nil {
		return 0, errJournal(err)
	}
	return n, nil
}
