package testenv

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS is a real NATS server with JetStream, run in-process on a free
// loopback port with its store in the test's temp dir. Stop and Start
// simulate the WAN to HQ going down and coming back: the port and the
// stored streams stay the same.
type NATS struct {
	t    testing.TB
	Port int
	Dir  string
	srv  *server.Server
	conf string // a nats-server config file (accounts, users); "" = none
}

// StartNATS starts the server and stops it with the test.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	n := &NATS{t: t, Dir: filepath.Join(t.TempDir(), "jetstream")}
	t.Cleanup(n.Stop)
	// A port picked free may be taken before the server binds it: try
	// another.
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		n.Port = FreePort(t)
		if err = n.start(); err == nil {
			return n
		}
	}
	t.Fatalf("nats server: %v", err)
	return nil
}

// URL is the client URL of the server.
func (n *NATS) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Port) }

// Start (re)starts the server on its port with its store.
func (n *NATS) Start() {
	n.t.Helper()
	if err := n.start(); err != nil {
		n.t.Fatalf("nats server: %v", err)
	}
}

func (n *NATS) start() error {
	if n.srv != nil && n.srv.Running() {
		return nil
	}
	opts := &server.Options{}
	if n.conf != "" {
		var err error
		if opts, err = server.ProcessConfigFile(n.conf); err != nil {
			return fmt.Errorf("config %s: %w", n.conf, err)
		}
	}
	opts.Host, opts.Port, opts.JetStream, opts.StoreDir = "127.0.0.1", n.Port, true, n.Dir
	opts.NoSigs, opts.NoLog, opts.MaxPayload = true, true, 1<<20
	srv, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("not ready on port %d", n.Port)
	}
	n.srv = srv
	return nil
}

// Stop shuts the server down and waits until it is gone.
func (n *NATS) Stop() {
	if n.srv == nil {
		return
	}
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
	n.srv = nil
}

// ClientNames are the names of the client connections the server holds
// (every account's).
func (n *NATS) ClientNames() []string {
	n.t.Helper()
	cz, err := n.srv.Connz(&server.ConnzOptions{Limit: 1 << 16})
	if err != nil {
		n.t.Fatalf("nats connz: %v", err)
	}
	var names []string
	for _, c := range cz.Conns {
		names = append(names, c.Name)
	}
	return names
}
