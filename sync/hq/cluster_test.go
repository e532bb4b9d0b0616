package hq_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/chainsim"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// binDir holds posedge-hq and nats-server, built once for the tests that
// run them as processes (buildBins).
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "posedge-hq-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var buildBins = sync.OnceValue(func() error {
	if err := testenv.BuildBinaries(binDir); err != nil {
		return err
	}
	_, err := testenv.BuildNATSServer(binDir)
	return err
})

func bins(t testing.TB) string {
	t.Helper()
	if err := buildBins(); err != nil {
		t.Fatal(err)
	}
	return binDir
}

// chainHQ is HQ as a chain runs it: a 3-node JetStream cluster, posedge-hq
// processes with stream_replicas 3, one PostgreSQL database.
type chainHQ struct {
	t        testing.TB
	NATS     *testenv.NATSCluster
	PG       *testenv.Postgres
	DB       string
	HQ       []*testenv.Proc
	admins   []string
	batch    int        // posedge-hq's batch_size
	cpuOut   string     // when set, posedge-hq 0 writes a CPU profile here
	replicas int        // posedge-hq's stream_replicas; 0 = 3
	store    hqdb.Store // the same database, read by the test
}

func startChainHQ(t testing.TB, processes int) *chainHQ {
	t.Helper()
	// The fault tests: PostgreSQL syncs its commits as in production, so
	// what posedge-hq acks after a commit is what a crash leaves.
	return chainHQOn(t, processes, hq.DefaultBatchSize, "", testenv.StartPostgresDurable)
}

// startChainHQWith is startChainHQ with posedge-hq's batch_size, on a
// PostgreSQL without fsync (the benchmarks measure HQ, not the disk).
func startChainHQWith(t testing.TB, processes, batch int, cpuOut string) *chainHQ {
	t.Helper()
	return chainHQOn(t, processes, batch, cpuOut, testenv.StartPostgres)
}

func chainHQOn(t testing.TB, processes, batch int, cpuOut string, startPG func(testing.TB) *testenv.Postgres) *chainHQ {
	t.Helper()
	bin := bins(t)
	c := &chainHQ{t: t, batch: batch, cpuOut: cpuOut, NATS: testenv.StartNATSCluster(t, filepath.Join(bin, "nats-server"), 3), PG: startPG(t)}
	c.DB = c.PG.NewDatabase(t)
	for i := range processes {
		c.HQ = append(c.HQ, c.newHQ(i, c.NATS.URL()))
	}
	for i := range c.HQ {
		c.StartHQ(i)
	}
	var err error
	c.store, err = hq.OpenStore(context.Background(), c.DB, hqdb.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.store.Close() })
	return c
}

func (c *chainHQ) newHQ(i int, natsURL string) *testenv.Proc {
	dir := c.t.TempDir()
	admin := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(c.t))
	c.admins = append(c.admins, admin)
	conf := filepath.Join(dir, "hq.yaml")
	replicas := c.replicas
	if replicas == 0 {
		replicas = 3
	}
	body := fmt.Sprintf("nats_url: %q\nstream_replicas: %d\ndatabase: %q\nadmin: {listen: %q}\nack_wait: \"5s\"\nbatch_size: %d\n",
		natsURL, replicas, c.DB, admin, c.batch)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		c.t.Fatal(err)
	}
	args := []string{filepath.Join(binDir, "posedge-hq"), "run", "--config", conf}
	if i == 0 && c.cpuOut != "" {
		args = append(args, "--cpuprofile", c.cpuOut)
	}
	p := &testenv.Proc{Name: fmt.Sprintf("posedge-hq %d", i), Args: args, Log: filepath.Join(dir, "hq.log")}
	c.t.Cleanup(p.Kill)
	return p
}

// StartHQ (re)starts posedge-hq i and waits until it consumes.
func (c *chainHQ) StartHQ(i int) {
	c.t.Helper()
	c.HQ[i].Start(c.t)
	c.waitReady(i, 90*time.Second)
}

func (c *chainHQ) waitReady(i int, d time.Duration) {
	c.t.Helper()
	cl := http.Client{Timeout: 2 * time.Second}
	testenv.WaitFor(c.t, d, c.HQ[i].Name+" ready", func() bool {
		if !c.HQ[i].Running() {
			c.t.Fatalf("%s exited:\n%s", c.HQ[i].Name, c.HQ[i].Tail(3000))
		}
		r, err := cl.Get("http://" + c.admins[i] + "/readyz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
}

// counted is the number of transactions the stores table counts (kept
// in the same transaction as the rows), -1 while the database does not
// answer: cheap where count(*) of millions of rows is not.
func (c *chainHQ) counted() int64 {
	return c.queryCount("SELECT COALESCE(sum(txn_count), 0) FROM stores")
}

// stored is the number of transactions in the database, -1 while it
// does not answer.
func (c *chainHQ) stored() int64 {
	return c.queryCount("SELECT count(*) FROM transactions")
}

// queryCount is the one number query answers, -1 while the database
// does not answer.
func (c *chainHQ) queryCount(query string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DB)
	if err != nil {
		return -1
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
		return -1
	}
	return n
}

// metricSum is the sum over every running posedge-hq of the samples of
// metric name in its /metrics (all label sets); a process that does not
// answer adds nothing.
func (c *chainHQ) metricSum(name string) float64 {
	cl := http.Client{Timeout: 2 * time.Second}
	var sum float64
	for _, admin := range c.admins {
		r, err := cl.Get("http://" + admin + "/metrics")
		if err != nil {
			continue
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			continue
		}
		sum += testenv.SumMetric(string(body), name)
	}
	return sum
}

// streamInfo is POS_TXN's info, asked of the cluster.
func (c *chainHQ) streamInfo() (*jetstream.StreamInfo, error) {
	nc, err := nats.Connect(c.NATS.URL(), nats.Timeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, wire.DefaultStream)
	if err != nil {
		return nil, err
	}
	return st.CachedInfo(), nil
}

// txnMessages is the number of transaction messages in POS_TXN (the
// stores' pos.txn.<store> subjects, not their manifests or heartbeats),
// -1 while the cluster does not answer.
func (c *chainHQ) txnMessages() int64 {
	nc, err := nats.Connect(c.NATS.URL(), nats.Timeout(2*time.Second))
	if err != nil {
		return -1
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return -1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, wire.DefaultStream)
	if err != nil {
		return -1
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(wire.DefaultSubjectPrefix+".*"))
	if err != nil {
		return -1
	}
	var n int64
	for _, v := range info.State.Subjects {
		n += int64(v)
	}
	return n
}

// streamLeader is the node leading POS_TXN.
func (c *chainHQ) streamLeader() *testenv.NATSNode {
	c.t.Helper()
	var leader string
	testenv.WaitFor(c.t, time.Minute, "a leader of "+wire.DefaultStream, func() bool {
		info, err := c.streamInfo()
		if err != nil || info.Cluster == nil {
			return false
		}
		leader = info.Cluster.Leader
		return leader != ""
	})
	return c.NATS.Node(leader)
}

// A chain's replay must land whole whatever one fault does to HQ
// meanwhile: every store's transactions stored once, none in conflict,
// none given up by a store, every manifest matching.
func TestChainReplaySurvivesTheStreamLeaderKilled(t *testing.T) {
	runChainFault(t, 2, func(c *chainHQ) {
		leader := c.streamLeader()
		t.Logf("killing the stream leader %s", leader.Name)
		leader.Kill()
		time.Sleep(3 * time.Second)
		leader.Start()
	})
}

func TestChainReplaySurvivesANodeFrozen(t *testing.T) {
	runChainFault(t, 2, func(c *chainHQ) {
		// The leader: its followers must elect another while it hangs,
		// and it must step down when it wakes.
		leader := c.streamLeader()
		t.Logf("freezing the stream leader %s for 8 s", leader.Name)
		leader.Freeze()
		time.Sleep(8 * time.Second)
		leader.Thaw()
	})
}

func TestChainReplaySurvivesPosedgeHQKilled(t *testing.T) {
	runChainFault(t, 2, func(c *chainHQ) {
		t.Logf("killing %s", c.HQ[0].Name)
		c.HQ[0].Kill()
		time.Sleep(2 * time.Second)
		c.StartHQ(0)
	})
}

func TestChainReplaySurvivesPostgresRestarted(t *testing.T) {
	runChainFault(t, 2, func(c *chainHQ) {
		t.Log("stopping PostgreSQL (immediate) for 3 s")
		c.PG.Stop(t)
		time.Sleep(3 * time.Second)
		c.PG.Start(t)
	})
}

// The chain in `make test`: small enough for a 2-core machine, each
// store's sync policy slow enough that the fault lands mid-replay.
const (
	faultStores    = 12
	faultTxns      = 400
	faultBatch     = 25
	faultSyncEvery = 300 * time.Millisecond
)

func runChainFault(t *testing.T, processes int, fault func(c *chainHQ)) {
	ctx := context.Background()
	c := startChainHQ(t, processes)
	if info, err := c.streamInfo(); err != nil || info.Config.Replicas != 3 {
		t.Fatalf("stream %s: replicas %v, %v; want 3", wire.DefaultStream, info, err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	chain, err := chainsim.Build(ctx, chainsim.Options{Stores: faultStores, Txns: faultTxns, Dir: t.TempDir(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Close()
	start := time.Now()
	stop, err := chain.Replay(ctx, chainsim.ReplayOptions{NATSURL: c.NATS.URL(), StartJitter: time.Second,
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
	at, into := c.stored(), time.Since(start)
	fault(c)
	t.Logf("fault at %d of %d stored, %v into the replay", at, total, into.Round(time.Millisecond))
	if at >= total {
		t.Fatalf("the replay was over before the fault: nothing was tested")
	}

	testenv.WaitFor(t, 2*time.Minute, "every store's journal acked by HQ", func() bool {
		n, err := chain.Backlog(ctx)
		return err == nil && n == 0
	})
	t.Logf("replay of %d transactions from %d stores done in %v", total, faultStores, time.Since(start).Round(time.Millisecond))
	for i := range c.HQ {
		c.waitReady(i, time.Minute)
	}
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

// checkChainMetrics checks that a posedge-hq reports the consumer
// caught up and every store complete.
func checkChainMetrics(t *testing.T, c *chainHQ, chain *chainsim.Chain) {
	t.Helper()
	var body string
	testenv.WaitFor(t, 30*time.Second, "the consumer's lag at 0 in /metrics", func() bool {
		r, err := hqClient(t).Get("http://" + c.admins[0] + "/metrics")
		if err != nil {
			return false
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		return strings.Contains(body, "\nposedge_hq_consumer_pending_messages 0\n") &&
			strings.Contains(body, "\nposedge_hq_consumer_ack_pending_messages 0\n")
	})
	for _, s := range chain.Stores {
		if want := fmt.Sprintf("\nposedge_hq_store_incomplete_manifests{store_id=%q} 0\n", s.ID); !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
}

// checkChainAtHQ checks no loss, no duplicate, no conflict and
// completeness for every store of the chain.
func checkChainAtHQ(t *testing.T, c *chainHQ, chain *chainsim.Chain) {
	t.Helper()
	ctx := context.Background()
	if q, err := chain.Quarantined(ctx); err != nil || q != 0 {
		t.Errorf("stores gave up %d transactions (%v)", q, err)
	}
	conn, err := pgx.Connect(ctx, c.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, distinct, conflicts int64
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (store_id, flow_no)) FROM transactions`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM conflicts`).Scan(&conflicts); err != nil {
		t.Fatal(err)
	}
	if rows != int64(chain.Txns()) || distinct != rows || conflicts != 0 {
		t.Errorf("HQ holds %d rows (%d distinct), %d conflicts; want %d, all distinct, none", rows, distinct, conflicts, chain.Txns())
	}
	for _, s := range chain.Stores {
		var sales, refunds int64
		var minFlow, maxFlow string
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'sale'), count(*) FILTER (WHERE kind = 'refund'),
			min(flow_no), max(flow_no) FROM transactions WHERE store_id = $1`, s.ID).Scan(&sales, &refunds, &minFlow, &maxFlow); err != nil {
			t.Fatal(err)
		}
		n := s.Sales + s.Refunds
		if sales != int64(s.Sales) || refunds != int64(s.Refunds) || minFlow != chainsim.FlowNo(1) || maxFlow != chainsim.FlowNo(n) {
			t.Errorf("%s at HQ: %d sales, %d refunds, flows %s..%s; want %d, %d, %s..%s",
				s.ID, sales, refunds, minFlow, maxFlow, s.Sales, s.Refunds, chainsim.FlowNo(1), chainsim.FlowNo(n))
		}
	}
	rep, err := c.store.Completeness(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Incomplete) != 0 {
		t.Errorf("days incomplete at HQ: %+v", rep.Incomplete)
	}
}

func storedManifestCount(db string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return -1
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM manifests").Scan(&n); err != nil {
		return -1
	}
	return n
}

// posedge-hq started while the cluster has no meta leader waits, says
// so, and creates the stream once it has; an existing stream with fewer
// replicas than stream_replicas is scaled up, and the log says so.
func TestHQWaitsForTheClusterAndScalesTheStreamUp(t *testing.T) {
	bin := bins(t)
	cl := testenv.StartNATSCluster(t, filepath.Join(bin, "nats-server"), 3)
	pg := testenv.StartPostgres(t)
	c := &chainHQ{t: t, batch: hq.DefaultBatchSize, NATS: cl, PG: pg, DB: pg.NewDatabase(t)}

	// An R1 stream made before posedge-hq ran with stream_replicas 3.
	nc, err := nats.Connect(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	testenv.WaitFor(t, time.Minute, "an R1 stream created", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: wire.DefaultStream, Subjects: []string{wire.DefaultSubjectPrefix + ".>"},
			Storage: jetstream.FileStorage, Replicas: 1})
		return err == nil
	})
	nc.Close()

	// Two of three servers down: no quorum, no meta leader.
	cl.Nodes[1].Kill()
	cl.Nodes[2].Kill()
	testenv.WaitFor(t, time.Minute, "the meta leader gone", func() bool { return cl.MetaLeader() == "" })
	c.HQ = append(c.HQ, c.newHQ(0, cl.URL()))
	c.HQ[0].Start(t)
	testenv.WaitFor(t, time.Minute, "posedge-hq to say it waits for the cluster", func() bool {
		return strings.Contains(c.HQ[0].Tail(20000), "JetStream cluster not ready")
	})
	cl.Nodes[1].Start()
	cl.Nodes[2].Start()
	c.waitReady(0, 2*time.Minute)

	if !strings.Contains(c.HQ[0].Tail(50000), "stream replicas raised") {
		t.Errorf("posedge-hq did not log the scale-up:\n%s", c.HQ[0].Tail(3000))
	}
	testenv.WaitFor(t, time.Minute, "POS_TXN with 3 current replicas", func() bool {
		info, err := c.streamInfo()
		if err != nil || info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current {
				return false
			}
		}
		return true
	})
}

// The catalog bucket keeps as many copies as the transaction stream
// (stream_replicas): on a 3-node cluster with stream_replicas 3 a write
// lands in an R3 bucket.
func TestCatalogBucketReplicatedAsTheStream(t *testing.T) {
	cl := testenv.StartNATSCluster(t, filepath.Join(bins(t), "nats-server"), 3)
	cl.WaitReady(time.Minute)
	nc, err := nats.Connect(cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := hq.DefaultConfig()
	cfg.StreamReplicas = 3
	cat := hq.NewCatalog(cfg, js)
	testenv.WaitFor(t, time.Minute, "a catalog write on the cluster", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _, err := cat.Put(ctx, "", "A1", hq.CatalogItem{Name: "Tea", PriceCents: 250, Active: true})
		return err == nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := js.Stream(ctx, "KV_"+cfg.CatalogBucket)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.CachedInfo().Config.Replicas; got != 3 {
		t.Fatalf("catalog bucket %s has %d replicas, want 3 (stream_replicas)", cfg.CatalogBucket, got)
	}
}
