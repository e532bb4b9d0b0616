package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/wire"
)

// startSecondHQ starts another posedge-hq process on the store's stream
// and database, as a second instance at HQ would run.
func startSecondHQ(t *testing.T, s *testenv.Store) *testenv.Proc {
	t.Helper()
	conf, err := os.ReadFile(filepath.Join(s.Dir, "hq.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	admin := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	body := strings.Replace(string(conf), fmt.Sprintf("%q", s.HQAdmin), fmt.Sprintf("%q", admin), 1)
	if body == string(conf) {
		t.Fatalf("hq.yaml does not name admin %s:\n%s", s.HQAdmin, conf)
	}
	path := filepath.Join(s.Dir, "hq-b.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &testenv.Proc{Name: "posedge-hq-b", Args: []string{filepath.Join(bin, "posedge-hq"), "run", "--config", path},
		Log: filepath.Join(s.Dir, "hq-b.log")}
	p.Start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- posedge-hq-b log tail:\n%s", p.Tail(3000))
		}
		p.Kill()
	})
	testenv.WaitFor(t, 30*time.Second, "posedge-hq-b /healthz", func() bool {
		return s.DoHQ(admin, "GET", "/healthz", nil).Status == 200
	})
	return p
}

// hqCount counts the rows posedge-hq stored for a store, and the
// distinct flow numbers among them.
func hqCount(t *testing.T, s *testenv.Store, store string) (rows, distinct int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+s.HQDB+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT flow_no) FROM transactions WHERE store_id = ?`, store).
		Scan(&rows, &distinct); err != nil {
		return 0, 0
	}
	return rows, distinct
}

// TestHQKilledMidBatchAndTwoInstances: while posedge-hq is down, the
// stream fills with a week's replay of another store (60,000 sales
// published as its daemon would) beside the live store's sales. posedge-hq
// is started and killed (SIGKILL) once part of that backlog is stored, in
// the middle of its batches; then it runs again beside a second
// posedge-hq process on the same stream and database. Every sale is at
// HQ once: nothing lost with the killed process's unacked batches,
// nothing stored twice by their redelivery or by the two processes.
func TestHQKilledMidBatchAndTwoInstances(t *testing.T) {
	const bulk = 60_000
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	// JetStream redelivers what a killed posedge-hq fetched after
	// ack_wait: 3 s here rather than the default 30 s.
	conf := filepath.Join(s.Dir, "hq.yaml")
	hqConf, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, append(hqConf, "ack_wait: \"3s\"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	putMixItems(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tl := runMix(t, ctx, s, 4, "hqkill", testSeed(t))

	s.HQ.Kill()
	other := s.StoreID + "B"
	nc, err := nats.Connect(s.NATS.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now().UTC().Format(time.RFC3339Nano)
	for i := 1; i <= bulk; i++ {
		flow := fmt.Sprintf("1%011d", i)
		m := nats.NewMsg(wire.TxnSubject(wire.DefaultSubjectPrefix, other))
		m.Header.Set(wire.HeaderMsgID, wire.MsgID(other, flow))
		m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
		m.Data = []byte(fmt.Sprintf(`{"flow_no":%q,"store_id":%q,"terminal_id":"T%02d","kind":"sale","total_cents":%d,"tender":"cash","lines":[{"barcode":"K1","qty":1,"price_cents":%d}],"created_at":%q,"occurred_at":%q}`,
			flow, other, i%8+1, 100+i%50, 100+i%50, created, created))
		if _, err := js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
		// Wait for the acks every 1,000 messages: on a loaded machine the
		// stream acks slower than this loop publishes, and the client
		// gives up ("stalled with too many outstanding") past its window.
		if i%1000 == 0 || i == bulk {
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(60 * time.Second):
				t.Fatalf("the stream did not ack the backlog (%d published)", i)
			}
		}
	}

	s.StartHQ()
	testenv.WaitFor(t, 60*time.Second, "posedge-hq to store part of the backlog", func() bool {
		n, _ := hqCount(t, s, other)
		return n > 0
	})
	s.HQ.Kill()
	mid, _ := hqCount(t, s, other)
	t.Logf("posedge-hq killed with %d of the %d sales of the backlog stored", mid, bulk)
	if mid >= bulk {
		t.Fatalf("posedge-hq had stored the whole backlog before it was killed: nothing tested")
	}

	s.StartHQ()
	startSecondHQ(t, s)
	testenv.WaitFor(t, 120*time.Second, "the whole backlog stored", func() bool {
		n, _ := hqCount(t, s, other)
		return n >= bulk
	})
	cancel()
	got := tl.wait()
	t.Log(tl.summary())
	auditMix(t, s, got)
	if n, d := hqCount(t, s, other); n != bulk || d != bulk {
		t.Fatalf("HQ holds %d rows (%d flow numbers) of the other store, want %d", n, d, bulk)
	}
}
