package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// StartNATSWithConfig starts a NATS server like StartNATS with conf, the
// text of a nats-server config file (accounts, users, permissions), on
// top; the listen address and JetStream store are set here.
func StartNATSWithConfig(t testing.TB, conf string) *NATS {
	t.Helper()
	dir := t.TempDir()
	n := &NATS{t: t, Dir: filepath.Join(dir, "jetstream"), conf: filepath.Join(dir, "nats.conf")}
	if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
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
