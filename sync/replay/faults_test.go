package replay

import (
	"fmt"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// TestLostPubAcksAreResentAndStoredOnce: the WAN carries the store's
// publishes to JetStream and loses every answer (testenv.DropAnswers):
// the stream stores the rows, read straight from the server, while the
// replayer hears no PubAck. No row is marked synced on a lost ack; once
// the link heals every row is published again with the same Nats-Msg-Id
// and the stream holds each once, byte for byte as journaled.
func TestLostPubAcksAreResentAndStoredOnce(t *testing.T) {
	srv := testenv.StartNATS(t)
	_, js := hqConn(t, srv.URL()) // HQ's side: straight to the server
	createStream(t, js)
	wan := testenv.StartFaultProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.Port))
	j := openJournal(t)
	cfg := testConfig("nats://" + wan.Addr())
	cfg.AckTimeout = time.Second
	r, reg := run(t, cfg, j, nil)
	appendSales(t, j, 1, 10)
	testenv.WaitFor(t, wait, "first sales sent", func() bool { return backlog(t, j) == 0 })

	wan.Set(testenv.DropAnswers, 0)
	const lost = 30
	appendSales(t, j, 11, 10+lost)
	r.Kick()
	// The publishes reached JetStream: the stream holds the rows...
	testenv.WaitForState(t, wait, "the rows stored while their acks are lost", func() (bool, string) {
		n := len(storedTxns(t, js))
		return n == 10+lost, fmt.Sprintf("stream holds %d", n)
	})
	// ...and their acks never came: the replayer timed out, kept them.
	testenv.WaitFor(t, wait, "publish timeouts", func() bool {
		return metric(t, reg, "posedge_replay_publish_errors_total", "kind", errTimeout) > 0
	})
	if n := backlog(t, j); n != lost {
		t.Fatalf("backlog %d with every PubAck lost, want %d (a row was marked synced without its ack)", n, lost)
	}
	sent, dropped := wan.AnswersLost()
	if sent == 0 || dropped == 0 {
		t.Fatalf("the WAN carried %d bytes to NATS and dropped %d of answers: the window was not hit", sent, dropped)
	}
	published := metric(t, reg, "posedge_replay_published_total")

	wan.Set(testenv.Reset, 0) // a reply cut mid-stream: start the connection afresh
	wan.Set(testenv.Pass, 0)
	testenv.WaitFor(t, wait, "backlog drained after the heal", func() bool { return backlog(t, j) == 0 })
	if again := metric(t, reg, "posedge_replay_published_total"); again < published+lost {
		t.Fatalf("published %v before the heal and %v after: the %d rows were not sent again", published, again, lost)
	}
	checkStoredOnce(t, js, j, 1, 10+lost)
	t.Logf("%d rows stored with their acks lost (%d answer bytes dropped), resent as %s.<flow_no>, stored once",
		lost, dropped, store)
}
