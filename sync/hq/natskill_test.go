package hq_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/chainsim"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
)

// TestReplaySurvivesNATSKilled: HQ's single JetStream server is
// SIGKILLed mid-replay and started again on its store dir. It runs as a
// real nats-server process with sync_interval: always, as
// docs/operations.md tells a chain to run it: the in-process server of
// testenv.StartNATS can only be shut down in order (it flushes and
// closes its files), which is not a crash. PostgreSQL syncs its commits
// (fsync on). Every transaction a store saw acked before the kill must
// still reach HQ: a store never sends an acked row again, so a PubAck
// given for a message the crash lost would be a row missing at HQ.
// Every store's transactions land once, none in conflict, none given
// up, every manifest matched.
func TestReplaySurvivesNATSKilled(t *testing.T) {
	ctx := context.Background()
	bin := bins(t)
	srv := testenv.StartNATSProcess(t, filepath.Join(bin, "nats-server"))
	c := &chainHQ{t: t, batch: hq.DefaultBatchSize, replicas: 1, PG: testenv.StartPostgresDurable(t)}
	c.DB = c.PG.NewDatabase(t)
	c.HQ = append(c.HQ, c.newHQ(0, srv.URL()))
	c.StartHQ(0)
	var err error
	if c.store, err = hq.OpenStore(ctx, c.DB, hqdb.StoreOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.store.Close() })

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	chain, err := chainsim.Build(ctx, chainsim.Options{Stores: 6, Txns: faultTxns, Dir: t.TempDir(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Close()
	stop, err := chain.Replay(ctx, chainsim.ReplayOptions{NATSURL: srv.URL(), StartJitter: 500 * time.Millisecond,
		BatchSize: faultBatch, AckTimeout: 5 * time.Second, SyncEvery: faultSyncEvery})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = stop()
		}
	}()
	total := int64(chain.Txns())
	testenv.WaitFor(t, time.Minute, "a quarter of the chain at HQ", func() bool { return c.stored() >= total/4 })
	// posedge-hq stops consuming: what the stores are acked for now is
	// in the stream only, the window a lost write would show in.
	c.HQ[0].Kill()
	stored := c.stored()
	var acked int64
	testenv.WaitForState(t, time.Minute, "transactions acked to the stores and in the stream only", func() (bool, string) {
		backlog, err := chain.Backlog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		acked = total - backlog
		return acked >= stored+200 || backlog == 0, ""
	})
	srv.Kill()
	t.Logf("nats-server SIGKILLed with %d of %d transactions acked to the stores, %d of them in the stream only (%d at HQ)",
		acked, total, acked-stored, stored)
	if acked == total || acked-stored < 100 {
		t.Fatal("the kill came after the replay or with nothing in the stream only: nothing was tested")
	}
	time.Sleep(time.Second)
	srv.Start()
	c.StartHQ(0)

	testenv.WaitFor(t, 2*time.Minute, "every store's journal acked by HQ", func() bool {
		n, err := chain.Backlog(ctx)
		return err == nil && n == 0
	})
	c.waitReady(0, time.Minute)
	testenv.WaitFor(t, time.Minute, "the manifests published", func() bool {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return chain.PublishManifests(pctx) == nil
	})
	manifests, err := chain.Manifests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "HQ to store every manifest", func() bool { return storedManifestCount(c.DB) == manifests })
	if err := stop(); err != nil {
		t.Errorf("replay: %v", err)
	}
	stopped = true
	checkChainAtHQ(t, c, chain)
	checkChainMetrics(t, c, chain)
}
