package hq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
)

// overlapStore is a real Store whose first InsertBatch waits (up to
// hold) for a second one to begin, and records whether it did: a batch's
// commit and acks overlap the next batch only if both are in flight.
type overlapStore struct {
	hqdb.Store
	hold       time.Duration
	mu         sync.Mutex
	calls      int
	second     chan struct{} // closed when the second call begins
	overlapped bool
}

func (s *overlapStore) InsertBatch(ctx context.Context, msgs []hqdb.Msg) ([]hqdb.Outcome, error) {
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	switch n {
	case 1:
		select {
		case <-s.second:
			s.mu.Lock()
			s.overlapped = true
			s.mu.Unlock()
		case <-time.After(s.hold):
		}
	case 2:
		close(s.second)
	}
	return s.Store.InsertBatch(ctx, msgs)
}

// TestIngestBatchesInFlight: with a backlog, the receiver stores the next
// batch while the first is still in InsertBatch (issue 26: the commit's
// wait no longer precedes the next insert), and every transaction is
// still stored once.
func TestIngestBatchesInFlight(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			n := testenv.StartNATS(t)
			cfg := testConfig(n.URL(), be.dsn(t))
			cfg.BatchSize = 5
			cfg.AckWait = 30 * time.Second // no redelivery while the first batch is held
			_, js := connect(t, n.URL())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := js.CreateStream(ctx, cfg.StreamConfig()); err != nil {
				t.Fatal(err)
			}
			const sales = 20
			for i := 1; i <= sales; i++ {
				f := fmt.Sprint(i)
				publish(t, js, txnMsg("S001", "S001."+f, sale{store: "S001", flow: f, cents: int64(i)}.body()))
			}
			log := testLogger(t)
			store := &overlapStore{Store: openStore(t, cfg.Database, hqdb.StoreOptions{Logger: log}),
				hold: 5 * time.Second, second: make(chan struct{})}
			m := hq.NewMetrics(store, "test", log)
			recv := hq.NewReceiver(cfg, store, m, log, "")
			done := make(chan error, 1)
			go func() { done <- recv.Run(ctx) }()
			defer func() {
				cancel()
				<-done
			}()
			testenv.WaitFor(t, waitLong, "all stored", func() bool { return count(t, store, "S001") == sales })
			consumerSettled(t, js)
			store.mu.Lock()
			overlapped, calls := store.overlapped, store.calls
			store.mu.Unlock()
			if !overlapped {
				t.Errorf("the second batch began only after the first was stored (%d InsertBatch calls): one batch in flight", calls)
			}
			if c := m.Counts(); c.Ingested != sales || c.Duplicates != 0 || c.BatchErrors != 0 {
				t.Fatalf("counts = %+v", c)
			}
		})
	}
}
