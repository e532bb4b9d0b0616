package hq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// Direct delivery (docs/hq-sync.md, "Direct delivery"). JetStream's
// duplicate check spans the stream and the contract fixes
// Nats-Msg-Id "<store>.<flow>", so a leaked credential of another store
// can keep a victim's next IDs claimed: it publishes them on its own
// subject every duplicate window, HQ refuses each forgery
// (msg_id_mismatch), and every resend of the victim is dropped as a
// duplicate. A store whose publish got a duplicate ack and which HQ,
// asked, still lacks, hands HQ the transaction here instead: a request
// outside the stream, where no Nats-Msg-Id is remembered. The message
// is checked exactly as on the stream (subject store = body store =
// Nats-Msg-Id store, the money screened) and stored by the same
// InsertBatch, once by the primary key.

// Direct deliveries a store may make per window, per posedge-hq process.
// A store uses this path only for rows shadowed by a duplicate ack, a
// confirm round at a time (at most 20 batches); 600 a minute bounds the
// database load of one store's credentials like the have requests.
const (
	deliverLimitPerStore = 600
	deliverLimitWindow   = time.Minute
)

// deliverHandler stores one transaction delivered on
// posedge.hq.deliver.<store> and answers wire.DeliverReply, only on the
// asking store's own reply prefix (replyOfStore).
func (r *Receiver) deliverHandler(ctx context.Context) nats.MsgHandler {
	limit := &storeWindows{limit: deliverLimitPerStore, window: deliverLimitWindow, used: map[string]*storeWindow{}}
	return func(m *nats.Msg) {
		storeID := strings.TrimPrefix(m.Subject, wire.DeliverSubjectPrefix+".")
		if !replyOfStore(m.Reply, storeID) {
			// Stored without an answer the store could read, or answered
			// where the store may not write (issue 22 finding 4): neither.
			r.metrics.deliverReqs.WithLabelValues("foreign_reply").Inc()
			r.log.Warn("deliver: reply subject outside the store's inbox; not taken", "store_id", storeID, "reply", m.Reply)
			return
		}
		reply, result := r.deliver(ctx, storeID, m, limit)
		r.metrics.deliverReqs.WithLabelValues(result).Inc()
		data, _ := json.Marshal(reply)
		if err := m.Respond(data); err != nil {
			r.log.Warn("deliver: reply", "store_id", storeID, "err", err)
		}
	}
}

// deliver checks and stores one directly delivered transaction of
// storeID; result is the metric's label.
func (r *Receiver) deliver(ctx context.Context, storeID string, m *nats.Msg, limit *storeWindows) (wire.DeliverReply, string) {
	if !validStoreID(storeID) {
		return wire.DeliverReply{Error: "invalid store ID in subject"}, "invalid"
	}
	if !limit.allow(storeID, time.Now()) {
		return wire.DeliverReply{Error: fmt.Sprintf("at most %d deliveries per store in %v; retry later", deliverLimitPerStore, deliverLimitWindow)}, "limited"
	}
	// The same decoding and checks as a message of the stream on the
	// store's own subject.
	subject := wire.TxnSubject(r.cfg.SubjectPrefix, storeID)
	msg, err := DecodeMsg(r.cfg.SubjectPrefix, subject, m.Header.Get(wire.HeaderSchema), m.Data, time.Now())
	if err == nil {
		err = CheckMsgID(msg, m.Header.Get(wire.HeaderMsgID))
	}
	if err != nil {
		reason := reasonInvalid
		var re *RejectError
		if errors.As(err, &re) {
			reason = re.Reason
		}
		r.metrics.rejected.WithLabelValues(reason).Inc()
		r.log.Error("direct delivery rejected", "store_id", storeID, "msg_id", m.Header.Get(wire.HeaderMsgID), "reason", reason, "err", err)
		return wire.DeliverReply{Error: "rejected: " + err.Error()}, "rejected"
	}
	Screen(&msg, r.cfg.MaxSaleCents)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	outs, err := r.store.InsertBatch(sctx, []hqdb.Msg{msg})
	cancel()
	if err != nil {
		r.log.Error("direct delivery: store", "store_id", storeID, "flow_no", msg.Txn.FlowNo, "err", err)
		return wire.DeliverReply{Error: "database unavailable"}, "error"
	}
	r.done1(&msg, outs[0])
	return wire.DeliverReply{Outcome: outs[0].String()}, "ok"
}
