package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/natsurl"
	"github.com/posedge/posedge/sync/wire"
)

// link is one NATS connection to HQ and its JetStream context.
type link struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// connect dials HQ until it succeeds or ctx ends, waiting a jittered
// exponential backoff between attempts (a Kick skips the wait). Once
// connected, the NATS client reconnects by itself for ever, with the
// same backoff.
func (r *Replayer) connect(ctx context.Context) (*link, error) {
	b := r.newBackoff()
	for {
		l, err := r.dial()
		if err == nil {
			r.nc.Store(l)
			r.m.connected.Set(1)
			r.log.Info("connected to HQ", "url", l.nc.ConnectedUrlRedacted())
			r.signal()
			return l, nil
		}
		err = fmt.Errorf("connect to HQ at %s: %w", natsurl.Redact(r.cfg.NATSURL), err)
		r.setError(err)
		d := b.NextBackOff()
		r.log.Warn("HQ unreachable; sales stay in the journal and are sent when it answers (check the WAN link and hq.nats_url)",
			"err", err, "retry_in", d.Round(time.Millisecond))
		if !sleep(ctx, d, r.wake) {
			return nil, ctx.Err()
		}
	}
}

func (r *Replayer) dial() (*link, error) {
	nc, err := nats.Connect(r.cfg.NATSURL, r.natsOptions()...)
	if err != nil {
		return nil, err
	}
	// Acks the client does not get within AckTimeout fail the publish
	// (ambiguous: resent later with the same Nats-Msg-Id).
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncTimeout(r.cfg.AckTimeout),
		jetstream.WithPublishAsyncMaxPending(max(4*r.cfg.BatchSize, 256))) // two batches in flight, and room
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &link{nc: nc, js: js}, nil
}

func (r *Replayer) natsOptions() []nats.Option {
	current := func(nc *nats.Conn) bool {
		l := r.nc.Load()
		return l != nil && l.nc == nc
	}
	opts := []nats.Option{
		nats.Name("posedge " + r.cfg.StoreID),
		// Replies (PubAcks, HQ's answers) come to _INBOX.<store>.…, so
		// that HQ's NATS can allow each store to read its own only
		// (docs/security.md).
		nats.CustomInboxPrefix(wire.InboxPrefix(r.cfg.StoreID)),
		nats.Timeout(5 * time.Second),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(r.reconnectDelay),
		// No hidden buffer while reconnecting: a publish then fails at
		// once and its row stays in the journal, the only outbox.
		nats.ReconnectBufSize(-1),
		// Notice a silently dead WAN link within about a minute.
		nats.PingInterval(20 * time.Second),
		nats.MaxPingsOutstanding(3),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if !current(nc) {
				return
			}
			r.m.connected.Set(0)
			if err != nil {
				r.setError(fmt.Errorf("disconnected from HQ: %w", err))
			}
			r.log.Warn("disconnected from HQ; sales stay in the journal until it is back", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			if !current(nc) {
				return
			}
			r.rmu.Lock()
			r.rb = nil
			r.rmu.Unlock()
			r.m.connected.Set(1)
			r.log.Info("reconnected to HQ", "url", nc.ConnectedUrlRedacted())
			r.signal()
		}),
		nats.ClosedHandler(func(nc *nats.Conn) {
			if current(nc) {
				r.m.connected.Set(0)
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			r.log.Warn("NATS error", "subject", subj, "err", err)
		}),
	}
	if r.cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(r.cfg.CredsFile))
	}
	if r.cfg.CAFile != "" {
		opts = append(opts, nats.RootCAs(r.cfg.CAFile))
	}
	if r.cfg.CertFile != "" {
		opts = append(opts, nats.ClientCert(r.cfg.CertFile, r.cfg.KeyFile))
	}
	return opts
}

// reconnectDelay is the NATS client's wait before each round of
// reconnect attempts (attempts counts from 1 in each outage).
func (r *Replayer) reconnectDelay(attempts int) time.Duration {
	r.rmu.Lock()
	defer r.rmu.Unlock()
	if r.rb == nil || attempts <= 1 {
		r.rb = r.newBackoff()
	}
	return r.rb.NextBackOff()
}
