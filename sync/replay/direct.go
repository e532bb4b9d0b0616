package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/wire"
)

// Direct delivery (docs/hq-sync.md, "Direct delivery"). A row whose
// publish JetStream acknowledged as a duplicate, and which HQ, asked,
// still lacks, has its Nats-Msg-Id held in the stream's duplicate window
// by another message: lost since, or a forgery by another store's leaked
// credential, which can claim the ID again every window so that every
// resend on the stream is dropped as well. Such a row is handed to
// posedge-hq directly, outside the stream (wire.DeliverSubject, a
// request answered on this store's inbox), with the same headers and
// body; HQ checks and stores it as it would the stream's message.

// deliverDirect hands HQ the rows of rows that got a duplicate ack and
// that HQ does not hold (held), and returns those HQ now holds. The
// others (HQ did not answer, an older posedge-hq without the subject,
// the store's limit at HQ) go back to the outbox as before. The round
// takes one hit of the sync budget, like a batch of publishes.
func (r *Replayer) deliverDirect(ctx context.Context, l *link, rows []journal.Unconfirmed, held map[string]bool) map[string]bool {
	var due []journal.Unconfirmed
	for _, u := range rows {
		if u.DupAck && !held[u.FlowNo] {
			due = append(due, u)
		}
	}
	if len(due) == 0 {
		return nil
	}
	if err := r.charge(ctx); err != nil {
		return nil
	}
	took := map[string]bool{}
	for _, u := range due {
		err := r.deliver1(ctx, l, u.FlowNo)
		var rowErr *rowError
		switch {
		case err == nil:
			took[u.FlowNo] = true
			continue
		case errors.As(err, &rowErr):
			// HQ answered about this row (refused it, its limit): the
			// next rows may still go.
			r.log.Warn("HQ did not take a row directly; publishing it again on the stream", "flow_no", u.FlowNo, "err", err)
			continue
		case errors.Is(err, nats.ErrNoResponders):
			// A posedge-hq without direct delivery: the stream it is.
			r.log.Debug("HQ does not take rows directly; publishing them again on the stream", "err", err)
		default:
			// No answer (a NATS user without the deliver subject's
			// permission, HQ gone): the others would wait as long.
			r.log.Warn("HQ did not answer a direct delivery; publishing the rows again on the stream (may this store's NATS user publish on "+
				wire.DeliverSubject(r.cfg.StoreID)+"? docs/security.md)", "rows", len(due), "err", err)
		}
		break
	}
	if len(took) > 0 {
		r.m.direct.Add(float64(len(took)))
		r.log.Warn("JetStream took rows as duplicates of another message (a Nats-Msg-Id claimed by another store's credential?) and HQ lacked them: handed to HQ directly",
			"rows", len(took))
	}
	return took
}

// overflowDirect hands HQ, directly, rows the stream refused because it
// is full as a whole, in order, and returns the acks of those HQ took: a
// prefix of rows. It stops at the first row HQ did not take, with why;
// the rest wait in the outbox for the stream as before. The batch they
// came in was charged to the sync budget already.
func (r *Replayer) overflowDirect(ctx context.Context, rows []journal.Outgoing) ([]journal.Ack, error) {
	l := r.nc.Load()
	if l == nil {
		return nil, ErrNotConnected
	}
	var took []journal.Ack
	for _, o := range rows {
		if err := r.deliver1(ctx, l, o.FlowNo); err != nil {
			if len(took) > 0 {
				r.m.direct.Add(float64(len(took)))
			}
			return took, err
		}
		took = append(took, journal.Ack{RowID: o.RowID})
	}
	r.m.direct.Add(float64(len(took)))
	r.log.Warn("HQ's stream is full (stream_max_bytes: flooded by a store?): rows handed to HQ directly", "rows", len(took))
	return took, nil
}

// deliver1 hands HQ one row; nil when HQ holds it now.
func (r *Replayer) deliver1(ctx context.Context, l *link, flowNo string) error {
	t, err := r.j.ByFlow(ctx, flowNo)
	if err != nil || t == nil {
		return &rowError{fmt.Sprintf("read row %s: %v", flowNo, errors.Join(err, errors.New("not in the journal")))}
	}
	if err := r.check(journal.Outgoing{FlowNo: t.FlowNo, Body: t.Body}); err != nil {
		return &rowError{err.Error()} // this row's own: the replay quarantines it
	}
	m := nats.NewMsg(wire.DeliverSubject(r.cfg.StoreID))
	m.Data = t.Body
	m.Header.Set(wire.HeaderMsgID, wire.MsgID(r.cfg.StoreID, t.FlowNo))
	m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
	rctx, cancel := context.WithTimeout(ctx, r.cfg.HaveTimeout)
	defer cancel()
	rep, err := l.nc.RequestMsgWithContext(rctx, m)
	if err != nil {
		return fmt.Errorf("deliver %s to HQ: %w", wire.MsgID(r.cfg.StoreID, flowNo), err)
	}
	var dr wire.DeliverReply
	if err := json.Unmarshal(rep.Data, &dr); err != nil {
		return fmt.Errorf("decode HQ's deliver reply: %w", err)
	}
	if dr.Error != "" || dr.Outcome == "" {
		return &rowError{fmt.Sprintf("HQ's deliver reply for %s: %q", wire.MsgID(r.cfg.StoreID, flowNo), dr.Error)}
	}
	return nil
}

// rowError is a direct delivery that failed for its row alone: HQ
// answered and did not take it (refused, limited, its database down),
// or the journal could not give it.
type rowError struct{ msg string }

func (e *rowError) Error() string { return e.msg }
