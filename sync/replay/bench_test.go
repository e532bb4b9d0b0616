package replay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/wire"
)

// BenchmarkReplayVsRawPublish compares, on the same server and stream,
// raw JetStream async publishing of n transaction messages with the
// replayer draining n journaled sales unthrottled (batches of the default
// 500; its connect, the outbox reads and the journal's sent and acked
// marks included). Goal: ratio >= 0.5.
func BenchmarkReplayVsRawPublish(b *testing.B) {
	const n = 10000
	srv := testenv.StartNATS(b)
	_, js := hqConn(b, srv.URL())
	ctx := context.Background()
	fresh := func() {
		b.Helper()
		if err := js.DeleteStream(ctx, wire.DefaultStream); err != nil && err != jetstream.ErrStreamNotFound {
			b.Fatal(err)
		}
		createStream(b, js)
	}
	body := txn(1, "T01", "sale", 199, 0).Body
	subject := wire.TxnSubject(wire.DefaultSubjectPrefix, store)
	var raw, replay time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		fresh()
		b.StartTimer()
		start := time.Now()
		futs := make([]jetstream.PubAckFuture, n)
		for k := range n {
			m := nats.NewMsg(subject)
			m.Data = body
			m.Header.Set(wire.HeaderMsgID, fmt.Sprintf("%s.%d.%d", store, i, k))
			m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
			f, err := js.PublishMsgAsync(m)
			if err != nil {
				b.Fatal(err)
			}
			futs[k] = f
		}
		for _, f := range futs {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
		raw += time.Since(start)

		b.StopTimer()
		fresh()
		j := openJournal(b)
		appendSales(b, j, 1, n)
		r, err := New(Config{StoreID: store, NATSURL: srv.URL(), Idle: 5 * time.Millisecond}, j, nil, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		b.StartTimer()
		start = time.Now()
		go func() { done <- r.Run(rctx) }()
		deadline := time.Now().Add(5 * time.Minute)
		for r.Status().Acked < n {
			if time.Now().After(deadline) {
				b.Fatalf("not drained: %+v", r.Status())
			}
			time.Sleep(time.Millisecond)
		}
		replay += time.Since(start)
		b.StopTimer()
		cancel()
		<-done
		if got := backlog(b, j); got != 0 {
			b.Fatalf("backlog %d after the drain", got)
		}
		b.StartTimer()
	}
	rawRate := float64(n*b.N) / raw.Seconds()
	replayRate := float64(n*b.N) / replay.Seconds()
	b.ReportMetric(rawRate, "raw_msgs/s")
	b.ReportMetric(replayRate, "replay_msgs/s")
	b.ReportMetric(replayRate/rawRate, "ratio")
}
