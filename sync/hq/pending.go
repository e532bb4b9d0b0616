package hq

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The have query's third answer, "pending" (docs/hq-sync.md, "No resend
// storm"): a row HQ's database lacks whose message is still in the
// stream, at a sequence above the durable consumer's ack floor, is on its
// way — the consumer has not read it yet (a backlog after posedge-hq was
// down for hours). Answering "lacks" would make every store resend its
// whole backlog into the stream. The stores send the stream sequence of
// each row's PubAck; a row outside the stream's [first, last] (purged,
// expired, a stream made again whose sequences restarted below it) or at
// or below the ack floor (read, yet not stored: a DeleteMsg'd gap the
// consumer passed, a database that lost it) lacks, and is resent.
// Sequences of a stream made again may name other messages: then a row
// waits until the consumer passes that sequence — a delay, never a loss.

// streamPosTTL is how long one look at the stream and consumer serves
// the have queries: one JetStream request a second at most, whatever
// the number of stores asking.
const streamPosTTL = time.Second

// streamPosTimeout bounds the look, inside the store's 2 s have timeout.
const streamPosTimeout = time.Second

// streamPos is where the stream and posedge-hq's consumer stand.
type streamPos struct {
	// known is false when JetStream did not answer: every row with a
	// sequence then counts as pending (asked again later, not resent).
	known                 bool
	first, last, ackFloor uint64
}

// unread says whether the message at seq is in the stream and not yet
// read by the consumer. seq 0 (a store that sent none) never is.
func (p streamPos) unread(seq uint64) bool {
	if seq == 0 {
		return false
	}
	if !p.known {
		return true
	}
	return seq > p.ackFloor && seq >= p.first && seq <= p.last
}

// streamView caches streamPos for streamPosTTL.
type streamView struct {
	mu  sync.Mutex
	at  time.Time
	pos streamPos
}

// streamPos is the stream's position as of at most streamPosTTL ago. It
// is read before the database is asked, so that a row stored meanwhile
// is found held rather than lacking.
func (r *Receiver) streamPos(ctx context.Context) streamPos {
	v := r.view
	v.mu.Lock()
	defer v.mu.Unlock()
	if time.Since(v.at) < streamPosTTL {
		return v.pos
	}
	pos, err := r.readStreamPos(ctx)
	if err != nil {
		r.log.Warn("have: stream position unknown; rows not found are answered pending, not lacking", "stream", r.cfg.Stream, "err", err)
	}
	v.pos, v.at = pos, time.Now()
	return pos
}

func (r *Receiver) readStreamPos(ctx context.Context) (streamPos, error) {
	nc := r.conn.Load()
	if nc == nil {
		return streamPos{}, errors.New("NATS: not started")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return streamPos{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, streamPosTimeout)
	defer cancel()
	st, err := js.Stream(ctx, r.cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return streamPos{known: true}, nil // nothing is on its way
	}
	if err != nil {
		return streamPos{}, err
	}
	s := st.CachedInfo().State
	pos := streamPos{known: true, first: s.FirstSeq, last: s.LastSeq}
	c, err := st.Consumer(ctx, ConsumerName)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		// posedge-hq creates it reading from the start: all unread.
	case err != nil:
		return streamPos{}, err
	default:
		pos.ackFloor = c.CachedInfo().AckFloor.Stream
	}
	return pos, nil
}

// pendingOf lists the flow numbers of req that the database does not
// hold (have) and whose messages the consumer has not read yet.
func (p streamPos) pendingOf(flows []string, seqs []uint64, have []string) []string {
	held := make(map[string]bool, len(have))
	for _, f := range have {
		held[f] = true
	}
	var out []string
	for i, f := range flows {
		if !held[f] && p.unread(seqs[i]) {
			out = append(out, f)
		}
	}
	return out
}
