package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// StartNATSProcess starts one nats-server process of bin
// (BuildNATSServer) with JetStream, configured as docs/operations.md
// tells a store chain to run it (sync_interval: always: every write
// fsynced before its PubAck), and kills it with the test. Unlike the
// in-process server (StartNATS), which can only be shut down in an
// orderly way, Kill is a SIGKILL: the server gets no chance to flush,
// close its files or say goodbye to its clients, as when its machine
// crashes.
func StartNATSProcess(t testing.TB, bin string) *NATSNode {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "nats")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		n := &NATSNode{t: t, Name: "nats", Port: FreePort(t), HTTPPort: FreePort(t), Dir: dir}
		conf := filepath.Join(dir, "nats.conf")
		body := fmt.Sprintf(`server_name: nats
host: 127.0.0.1
port: %d
http: "127.0.0.1:%d"
max_payload: 1MB
jetstream {
  store_dir: %q
  sync_interval: always
}
`, n.Port, n.HTTPPort, filepath.Join(dir, "jetstream"))
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		n.Proc = &Proc{Name: "nats-server", Args: []string{bin, "-c", conf}, Log: filepath.Join(dir, fmt.Sprintf("nats%d.log", attempt))}
		n.Proc.Start(t)
		if err = n.waitListening(30 * time.Second); err == nil {
			t.Cleanup(n.Kill)
			return n
		}
		n.Kill()
	}
	t.Fatalf("nats-server process: %v", err)
	return nil
}
