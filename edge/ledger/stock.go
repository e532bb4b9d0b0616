package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/wire"
)

// MaxStockDelta bounds one stock adjustment.
const MaxStockDelta = 1 << 40

// StockAdjustment is a relative stock change asked for at the store:
// receiving goods, a count's correction, damage.
type StockAdjustment struct {
	Delta          int64  `json:"delta"`
	Reason         string `json:"reason"`
	IdempotencyKey string `json:"idempotency_key"`
}

// AdjustmentResult is the answer to a stock adjustment, the same for
// every retry with its key.
type AdjustmentResult struct {
	Barcode      string `json:"barcode"`
	Delta        int64  `json:"delta"`
	Stock        int64  `json:"stock"`
	AdjustmentID string `json:"adjustment_id"`
}

// AdjustStock changes an item's stock by a.Delta, atomically with the
// sales (a relative change in one script, never an overwrite), journals
// it for HQ and answers; the same idempotency key again replays the
// answer. Redis must answer: stock lives there.
func (l *Ledger) AdjustStock(ctx context.Context, barcode string, a StockAdjustment) (*AdjustmentResult, error) {
	switch {
	case !ValidBarcode(barcode):
		return nil, Errorf(KindInvalid, "invalid_barcode", "barcode must be 1-64 of [A-Za-z0-9._-]")
	case a.Delta == 0 || a.Delta > MaxStockDelta || a.Delta < -MaxStockDelta:
		return nil, Errorf(KindInvalid, "invalid_qty", "delta must be a non-zero whole number of at most %d either way", int64(MaxStockDelta))
	case !wire.ValidAdjustmentReason(a.Reason):
		return nil, Errorf(KindInvalid, "invalid_reason", "reason must be receiving, count, damage or other")
	case !ValidKey(a.IdempotencyKey):
		return nil, Errorf(KindInvalid, "invalid_idempotency_key", "idempotency_key must be 1-64 of [A-Za-z0-9._:-]")
	}
	fp := Fingerprint(struct {
		Barcode string
		StockAdjustment
	}{barcode, a})
	if r, err := l.adjustmentFromJournal(ctx, a.IdempotencyKey, fp); r != nil || err != nil {
		return r, err
	}
	if l.Degraded() {
		return nil, errRedisUnavailable("adjusting stock")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	res, err := redisdb.RunStockAdjust(rctx, l.rdb, l.k, barcode, a.IdempotencyKey, a.Delta, id, fp, int64(l.cfg.IdemTTL/time.Second)).Slice()
	if err != nil {
		if outage(ctx, err) {
			l.SetRedisDown(true)
			return nil, errRedisUnavailable("adjusting stock")
		}
		return nil, err
	}
	switch res[0] {
	case "unknown_item":
		return nil, Errorf(KindNotFound, "item_not_found", "barcode %s is not in the item master", barcode)
	case "insufficient_stock":
		return nil, Errorf(KindConflict, "insufficient_stock", "stock of %s is %v: a delta of %d would take it below zero", barcode, res[1], a.Delta)
	case "exists":
		// Redis applied it for an earlier try whose journal write failed:
		// journal it now, with the stock Redis recorded then.
		if same, _ := res[3].(int64); same != 1 {
			return nil, errKeyReused()
		}
		id, _ = res[2].(string)
	}
	stock, _ := strconv.ParseInt(str(res[1]), 10, 64)
	now := l.now().UTC()
	r := &AdjustmentResult{Barcode: barcode, Delta: a.Delta, Stock: stock, AdjustmentID: id}
	body, _ := json.Marshal(wire.StockAdjustment{StoreID: l.cfg.StoreID, AdjustmentID: id, Barcode: barcode, Delta: a.Delta,
		Reason: a.Reason, Stock: stock, CreatedAt: now.Format(time.RFC3339Nano)})
	err = l.j.AppendAdjustment(ctx, journal.Adjustment{AdjustmentID: id, IdemKey: a.IdempotencyKey, Fingerprint: fp,
		Barcode: barcode, Delta: a.Delta, Reason: a.Reason, Stock: stock, CreatedAt: now, Body: body})
	if errors.Is(err, journal.ErrDuplicateKey) {
		return l.adjustmentFromJournal(ctx, a.IdempotencyKey, fp)
	}
	if err != nil {
		return nil, errJournal(err)
	}
	return r, nil
}

func (l *Ledger) adjustmentFromJournal(ctx context.Context, key, fp string) (*AdjustmentResult, error) {
	j, err := l.j.AdjustmentByKey(ctx, key)
	if err != nil {
		return nil, errJournal(err)
	}
	if j == nil {
		return nil, nil
	}
	if j.Fingerprint != fp {
		return nil, errKeyReused()
	}
	return &AdjustmentResult{Barcode: j.Barcode, Delta: j.Delta, Stock: j.Stock, AdjustmentID: j.AdjustmentID}, nil
}
