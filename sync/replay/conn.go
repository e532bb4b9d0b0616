package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/natsurl"
	"github.com/posedge/posedge/sync/hqlink"
)

// link is one NATS connection to HQ and its JetStream context; the
// connection is also handed to the catalog watch through Replayer.Link.
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
			r.link.Set(l.nc)
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
	opts := append(hqlink.Options(hqlink.Config{StoreID: r.cfg.StoreID, NATSURL: r.cfg.NATSURL, CredsFile: r.cfg.CredsFile,
		CAFile: r.cfg.CAFile, CertFile: r.cfg.CertFile, KeyFile: r.cfg.KeyFile}),
		nats.CustomReconnectDelay(r.reconnectDelay),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if !current(nc) {
				return
			}
			r.m.connected.Set(0)
			r.link.Changed()
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
			r.link.Changed()
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
	)
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
