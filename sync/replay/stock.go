package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/posedge/posedge/sync/wire"
)

// adjustments publishes the stock adjustments HQ has not acknowledged
// (contract §6), oldest first, on <prefix>.<store>.stock with the
// Nats-Msg-Id "<store>.adj.<id>": one hit of the store's sync budget per
// round, like a batch of sales. Each is marked acknowledged only after
// JetStream's ack; one not acked is resent later with the same id.
func (r *Replayer) adjustments(ctx context.Context, l *link) (int, error) {
	as, err := r.j.PendingAdjustments(ctx, r.cfg.BatchSize)
	if err != nil || len(as) == 0 {
		return 0, err
	}
	if err := r.charge(ctx); err != nil {
		return 0, err
	}
	subject := wire.StockSubject(r.cfg.SubjectPrefix, r.cfg.StoreID)
	var acked []string
	for _, a := range as {
		m := nats.NewMsg(subject)
		m.Header.Set(wire.HeaderMsgID, wire.AdjustmentMsgID(r.cfg.StoreID, a.AdjustmentID))
		m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
		m.Data = a.Body
		pctx, cancel := context.WithTimeout(ctx, r.cfg.AckTimeout)
		_, err = l.js.PublishMsg(pctx, m)
		cancel()
		if err != nil {
			err = fmt.Errorf("publish stock adjustment %s: %w", a.AdjustmentID, err)
			break
		}
		acked = append(acked, a.AdjustmentID)
	}
	// Recorded with a context of its own: an ack JetStream gave is kept
	// even when the daemon is stopping.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if aerr := r.j.AckAdjustments(actx, acked, time.Now()); aerr != nil {
		err = errors.Join(err, fmt.Errorf("record acknowledged stock adjustments: %w", aerr))
	}
	return len(acked), err
}
