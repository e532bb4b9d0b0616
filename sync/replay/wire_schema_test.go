package replay

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/internal/testenv/wireschema"
	"github.com/posedge/posedge/sync/wire"
)

// What a real replayer sends on a real NATS server from a real journal —
// heartbeats with a backlog (HQ's stream missing, so nothing is acked)
// and without, the "have" query of rows sent before without an ack, a
// day's manifests — each valid against its schema in docs/wire.
func TestStoreSideMessagesMatchTheirSchemas(t *testing.T) {
	schemas := map[string]*jsonschema.Schema{"heartbeat": wireschema.Compile(t, "heartbeat"),
		"manifest": wireschema.Compile(t, "manifest"), "have-request": wireschema.Compile(t, "have-request")}
	srv := testenv.StartNATS(t)
	nc, js := hqConn(t, srv.URL())
	j := openJournal(t)
	appendSales(t, j, 1, 20)
	ctx := context.Background()
	if err := j.MarkSent(ctx, flowNo(1), flowNo(2), flowNo(3)); err != nil {
		t.Fatal(err)
	}

	var (
		mu     sync.Mutex
		bodies = map[string][][]byte{}
	)
	keep := func(kind string, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		bodies[kind] = append(bodies[kind], append([]byte(nil), data...))
	}
	count := func(kind string, want func(map[string]any) bool) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, b := range bodies[kind] {
			var m map[string]any
			if json.Unmarshal(b, &m) == nil && want(m) {
				n++
			}
		}
		return n
	}
	every := func(map[string]any) bool { return true }
	for kind, subject := range map[string]string{
		"heartbeat": wire.HeartbeatSubject(wire.DefaultSubjectPrefix, store),
		"manifest":  wire.ManifestSubject(wire.DefaultSubjectPrefix, store),
	} {
		sub, err := nc.Subscribe(subject, func(m *nats.Msg) { keep(kind, m.Data) })
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
	}
	have, err := nc.Subscribe(wire.HaveSubject(store), func(m *nats.Msg) {
		keep("have-request", m.Data)
		m.Respond([]byte(`{"have":[]}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer have.Unsubscribe()

	cfg := testConfig(srv.URL())
	cfg.HeartbeatEvery = 200 * time.Millisecond
	r, _ := run(t, cfg, j, nil)
	testenv.WaitFor(t, wait, "a heartbeat with a backlog", func() bool {
		return count("heartbeat", func(m map[string]any) bool { return m["oldest_unsent"] != nil }) > 0
	})
	createStream(t, js)
	testenv.WaitFor(t, wait, "backlog drained", func() bool { return backlog(t, j) == 0 })
	testenv.WaitFor(t, wait, "a heartbeat with nothing to send", func() bool {
		return count("heartbeat", func(m map[string]any) bool { return m["backlog"] == 0.0 }) > 0
	})
	testenv.WaitFor(t, wait, "the have query", func() bool { return count("have-request", every) > 0 })
	if err := r.PublishManifest(ctx, "20261130"); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, wait, "the day's manifest", func() bool { return count("manifest", every) > 0 })

	mu.Lock()
	defer mu.Unlock()
	for kind, list := range bodies {
		for _, b := range list {
			if err := wireschema.Validate(schemas[kind], b); err != nil {
				t.Errorf("%s against docs/wire/%s.schema.json: %v\n%s", kind, kind, err, b)
			}
		}
	}
	// No rubber stamp: a real heartbeat with its backlog as a string fails.
	var hb map[string]any
	if err := json.Unmarshal(bodies["heartbeat"][0], &hb); err != nil {
		t.Fatal(err)
	}
	hb["backlog"] = "3"
	b, _ := json.Marshal(hb)
	if err := wireschema.Validate(schemas["heartbeat"], b); err == nil {
		t.Errorf("the heartbeat schema accepted %s", b)
	}
}
