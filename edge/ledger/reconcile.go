package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/posedge/posedge/offline/journal"
)

// ApplyDegraded applies journaled degraded-mode transactions to Redis
// (stock, counters, idempotency record), each exactly once: txn.lua skips
// a transaction whose record already exists. It returns how many it
// applied; it stops at the first Redis outage.
func (l *Ledger) ApplyDegraded(ctx context.Context) (int, error) {
	applied := 0
	for {
		txns, err := l.j.Unapplied(ctx, 100)
		if err != nil {
			return applied, err
		}
		if len(txns) == 0 {
			return applied, nil
		}
		for _, t := range txns {
			prefix := `{"flow_no":"` + t.FlowNo + `",`
			a := txnArgs{mode: "apply_" + t.Kind, term: t.TerminalID, key: t.IdemKey, fp: t.Fingerprint, tender: t.Tender,
				day: t.BusinessDay, hour: t.BusinessHour, total: t.TotalCents, bodyRest: strings.TrimPrefix(string(t.Body), prefix),
				flow: t.FlowNo, refundOf: t.OriginalFlowNo}
			for _, ln := range t.Lines {
				a.lines = append(a.lines, scriptLine{barcode: ln.Barcode, qty: ln.Qty})
			}
			res, err := l.run(ctx, a)
			if err != nil {
				return applied, fmt.Errorf("apply degraded %s: %w", t.FlowNo, err)
			}
			if tag, _ := res[0].(string); tag == "ok" {
				applied++
				if n, _ := res[2].(int64); n > 0 {
					l.metrics.negativeStock.Add(float64(n))
				}
			}
			if err := l.j.MarkApplied(ctx, t.FlowNo); err != nil {
				return applied, err
			}
		}
	}
}

// RecoverOrphans finds sales whose effects and result a crashed daemon
// left in Redis (state PROCESSING, another owner, older than a few
// seconds) without a journal row, and journals them as they are, marked
// recovered. Run at start, before /readyz turns 200.
func (l *Ledger) RecoverOrphans(ctx context.Context) (int, error) {
	found := 0
	iter := l.rdb.Scan(ctx, 0, l.k.p+"idem:*", 500).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		m, err := l.rdb.HGetAll(ctx, key).Result()
		if err != nil {
			return found, fmt.Errorf("read %s: %w", key, err)
		}
		if m["state"] != "PROCESSING" || m["owner"] == l.owner {
			continue
		}
		rest := strings.TrimPrefix(key, l.k.p+"idem:")
		term, idem, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if t, err := l.j.ByKey(ctx, term, idem); err != nil {
			return found, err
		} else if t != nil {
			l.complete(ctx, term, idem)
			continue
		}
		res := []any{"exists", m["state"], int64(1), m["flow_no"], m["owner"], "0", m["body"]}
		var b body
		_ = jsonUnmarshal([]byte(m["body"]), &b)
		t := journal.Txn{TerminalID: term, IdemKey: idem, Fingerprint: m["fp"], Kind: b.Kind, Tender: b.Tender,
			TotalCents: b.TotalCents, OriginalFlowNo: b.OriginalFlowNo, CreatedAt: time.Now(), Lines: jlines(b.Lines)}
		if t.Kind == "" {
			continue
		}
		if _, err := l.existing(ctx, res, t); err != nil {
			return found, err
		}
		l.log.Warn("journaled a sale a crash left only in redis", "terminal", term, "flow_no", m["flow_no"])
		found++
	}
	return found, iter.Err()
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
	return l.rdb.Eval(ctx, `local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if cur < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end return 1`, []string{l.k.seq()}, floor).Err()
}

// Watch keeps degraded mode in step with Redis: it pings every interval;
// on failure it enters degraded mode, and once Redis answers again it
// applies the degraded sales and only then leaves degraded mode.
func (l *Ledger) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := l.Ping(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			l.SetRedisDown(true)
		} else if l.Degraded() || l.hasUnapplied(ctx) {
			if err := l.RaiseSequence(ctx); err != nil {
				l.log.Warn("raise flow sequence", "err", err)
			} else if n, err := l.ApplyDegraded(ctx); err != nil {
				l.log.Warn("apply degraded sales", "applied", n, "err", err)
			} else {
				if n > 0 {
					l.log.Info("applied degraded sales to redis", "count", n)
				}
				l.SetRedisDown(false)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (l *Ledger) hasUnapplied(ctx context.Context) bool {
	has, err := l.j.HasUnapplied(ctx)
	return err == nil && has
}
