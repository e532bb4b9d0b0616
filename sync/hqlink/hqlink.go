package hqlink

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/posedge/posedge/sync/wire"
)

// Config names HQ's NATS and the store's credentials for it (the hq.*
// settings of the store's config).
type Config struct {
	StoreID   string
	NATSURL   string
	CredsFile string
	CAFile    string
	CertFile  string
	KeyFile   string
}

// Options are the NATS options of the store's connection to HQ, without
// the owner's handlers (connect, disconnect, reconnect), which the dialer
// adds.
func Options(cfg Config) []nats.Option {
	opts := []nats.Option{
		nats.Name("posedge " + cfg.StoreID),
		// Replies (PubAcks, HQ's answers, the catalog's reads) come to
		// _INBOX.<store>.…, so that HQ's NATS can allow each store to
		// read its own only (docs/security.md).
		nats.CustomInboxPrefix(wire.InboxPrefix(cfg.StoreID)),
		nats.Timeout(5 * time.Second),
		nats.MaxReconnects(-1),
		// No hidden buffer while reconnecting: a publish then fails at
		// once and its row stays in the journal, the only outbox.
		nats.ReconnectBufSize(-1),
		// Notice a silently dead WAN link within about a minute.
		nats.PingInterval(20 * time.Second),
		nats.MaxPingsOutstanding(3),
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.CAFile))
	}
	if cfg.CertFile != "" {
		opts = append(opts, nats.ClientCert(cfg.CertFile, cfg.KeyFile))
	}
	return opts
}

// Dial connects once with Options(cfg) and extra (tools and tests; the
// daemon's connection is dialed by the replay, which retries).
func Dial(cfg Config, extra ...nats.Option) (*nats.Conn, error) {
	return nats.Connect(cfg.NATSURL, append(Options(cfg), extra...)...)
}

// Link is the connection of the moment. Its owner sets it and tells each
// change; its users wait for it and restart what they built on it (a
// subscription's missed messages, a watch) at each change.
type Link struct {
	mu      sync.Mutex
	nc      *nats.Conn
	changed chan struct{} // closed at the next change
}

// New returns a link with no connection yet.
func New() *Link { return &Link{changed: make(chan struct{})} }

// Set makes nc the connection of the moment (nil: none) and tells the
// users.
func (l *Link) Set(nc *nats.Conn) {
	l.mu.Lock()
	l.nc = nc
	l.mu.Unlock()
	l.Changed()
}

// Changed tells the users the connection went down or came back: what
// they subscribed is kept by the client, but messages in between are lost.
func (l *Link) Changed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.changed)
	l.changed = make(chan struct{})
}

// Conn waits until there is a connected connection and returns it with a
// channel closed at its next change; the error is ctx's.
func (l *Link) Conn(ctx context.Context) (*nats.Conn, <-chan struct{}, error) {
	for {
		l.mu.Lock()
		nc, ch := l.nc, l.changed
		l.mu.Unlock()
		if nc != nil && nc.IsConnected() {
			return nc, ch, nil
		}
		// A connection that is reconnecting tells its return through
		// Changed; poll too, so that a change missed between the two
		// reads above costs at most a second.
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-ch:
		case <-time.After(time.Second):
		}
	}
}

// Open dials cfg's NATS (retrying in the background until it answers)
// and returns a link whose users are told of each disconnect and
// reconnect: for tools and tests that have no replay to dial for them.
func Open(cfg Config, extra ...nats.Option) (*Link, *nats.Conn, error) {
	l := New()
	opts := append(Options(cfg),
		nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(*nats.Conn) { l.Changed() }),
		nats.DisconnectErrHandler(func(*nats.Conn, error) { l.Changed() }),
		nats.ReconnectHandler(func(*nats.Conn) { l.Changed() }))
	nc, err := nats.Connect(cfg.NATSURL, append(opts, extra...)...)
	if err != nil {
		return nil, nil, err
	}
	l.Set(nc)
	return l, nc, nil
}
