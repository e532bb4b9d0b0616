package hq_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

const waitLong = 60 * time.Second // generous: a 2-core machine shared with other test runs

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	}
	return slog.New(slog.DiscardHandler)
}

func testConfig(natsURL, dsn string) hq.Config {
	c := hq.DefaultConfig()
	c.NATSURL, c.Database = natsURL, dsn
	c.DuplicateWindow = time.Second
	c.AckWait = 5 * time.Second
	c.BatchSize = 50
	return c
}

// runningHQ is a Receiver run in the test process.
type runningHQ struct {
	recv    *hq.Receiver
	store   hqdb.Store
	metrics *hq.Metrics
	stop    func()
}

func startReceiver(t *testing.T, cfg hq.Config, name string) *runningHQ {
	t.Helper()
	log := testLogger(t).With("hq", name)
	store := openStore(t, cfg.Database, hqdb.StoreOptions{SilentAfter: cfg.SilentAfter, Logger: log})
	m := hq.NewMetrics(store, "test", log)
	recv := hq.NewReceiver(cfg, store, m, log, name)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recv.Run(ctx) }()
	r := &runningHQ{recv: recv, store: store, metrics: m}
	var once bool
	r.stop = func() {
		if once {
			return
		}
		once = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("receiver %s: %v", name, err)
			}
		case <-time.After(waitLong):
			t.Errorf("receiver %s did not stop within %v of cancel", name, waitLong)
		}
	}
	t.Cleanup(r.stop)
	testenv.WaitFor(t, waitLong, "receiver "+name+" ready", func() bool { return recv.Ready() == nil })
	return r
}

func connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func txnMsg(store, msgID string, body []byte) *nats.Msg {
	m := nats.NewMsg(wire.TxnSubject(wire.DefaultSubjectPrefix, store))
	m.Header.Set(wire.HeaderMsgID, msgID)
	m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
	m.Data = body
	return m
}

func publish(t testing.TB, js jetstream.JetStream, m *nats.Msg) *jetstream.PubAck {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := js.PublishMsg(ctx, m)
	if err != nil {
		t.Fatalf("publish %s: %v", m.Subject, err)
	}
	return ack
}

func count(t testing.TB, s hqdb.Store, store string) int64 {
	w, err := s.Watermark(context.Background(), store)
	if err != nil {
		t.Fatalf("watermark: %v", err)
	}
	return w.Count
}

// consumerSettled waits until the durable consumer has nothing pending
// and nothing unacknowledged.
func consumerSettled(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	testenv.WaitFor(t, waitLong, "consumer to have everything acked", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, wire.DefaultStream, hq.ConsumerName)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
}

// TestReceiverStoresOnce: duplicates of any age and message ID are stored
// once, a different body under a stored key goes to conflicts, and
// messages that can never be stored are terminated without blocking.
func TestReceiverStoresOnce(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			n := testenv.StartNATS(t)
			h := startReceiver(t, testConfig(n.URL(), be.dsn(t)), "hq")
			_, js := connect(t, n.URL())

			a := sale{store: "S001", flow: "1", cents: 700}
			publish(t, js, txnMsg("S001", "S001.1", a.body()))
			testenv.WaitFor(t, waitLong, "sale stored", func() bool { return count(t, h.store, "S001") == 1 })

			// The same message ID once JetStream's duplicate window has passed.
			testenv.WaitFor(t, waitLong, "duplicate window to pass", func() bool {
				return !publish(t, js, txnMsg("S001", "S001.1", a.body())).Duplicate
			})
			testenv.WaitFor(t, waitLong, "duplicate counted", func() bool { return h.metrics.Counts().Duplicates == 1 })

			// Another body under flow 1: kept apart, not overwritten.
			b := sale{store: "S001", flow: "1", cents: 900, terminal: "T02"}
			testenv.WaitFor(t, waitLong, "duplicate window to pass", func() bool {
				return !publish(t, js, txnMsg("S001", "S001.1", b.body())).Duplicate
			})
			testenv.WaitFor(t, waitLong, "conflict counted", func() bool { return h.metrics.Counts().Conflicts == 1 })
			cs, err := h.store.Conflicts(context.Background(), "S001")
			if err != nil || len(cs) != 1 || !hq.SameJSON(cs[0].Body, b.body()) {
				t.Fatalf("conflicts = %v, %v", cs, err)
			}
			if got, _ := h.store.Transaction(context.Background(), "S001", "1"); string(got) != string(a.body()) {
				t.Fatalf("stored body changed to %s", got)
			}

			// Unstorable messages are terminated; the next one is stored.
			publish(t, js, txnMsg("S001", "bad.1", []byte("{not json")))
			publish(t, js, txnMsg("S001", "bad.2", sale{store: "S002", flow: "9", cents: 1}.body())) // store ID ≠ subject
			publish(t, js, txnMsg("S001", "bad.3", []byte(`{"flow_no":"3","store_id":"S001"}`)))     // fields missing
			// Message IDs that disagree with the subject's store or the body's
			// flow (issue 22 finding 1): refused, never shadowing anyone.
			publish(t, js, txnMsg("S001", "S002.2", sale{store: "S001", flow: "2", cents: 5}.body()))
			publish(t, js, txnMsg("S001", "S001.7", sale{store: "S001", flow: "2", cents: 5}.body()))
			publish(t, js, txnMsg("S001", "S001.1.resent", a.body()))
			publish(t, js, txnMsg("S001", "S001.2", sale{store: "S001", flow: "2", cents: 5}.body()))
			testenv.WaitFor(t, waitLong, "next sale stored", func() bool { return count(t, h.store, "S001") == 2 })
			testenv.WaitFor(t, waitLong, "rejects counted", func() bool { return h.metrics.Counts().Rejected == 6 })
			consumerSettled(t, js)
			if c := h.metrics.Counts(); c.Ingested != 2 || c.Duplicates != 1 || c.Conflicts != 1 {
				t.Fatalf("counts = %+v", c)
			}
		})
	}
}

// TestTwoReceivers: two receivers share the consumer and the database; no
// transaction is lost or stored twice.
func TestTwoReceivers(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			n := testenv.StartNATS(t)
			cfg := testConfig(n.URL(), be.dsn(t))
			a := startReceiver(t, cfg, "hq-a")
			b := startReceiver(t, cfg, "hq-b")
			_, js := connect(t, n.URL())

			stores := []string{"S001", "S002", "S003"}
			const perStore, resent = 500, 200
			pub := func(store string, i int, id string) {
				body := sale{store: store, flow: fmt.Sprint(i), cents: int64(i), terminal: fmt.Sprintf("T%02d", i%4)}.body()
				if _, err := js.PublishMsgAsync(txnMsg(store, id, body)); err != nil {
					t.Errorf("publish: %v", err)
				}
			}
			for i := 1; i <= perStore; i++ {
				for _, s := range stores {
					pub(s, i, wire.MsgID(s, fmt.Sprint(i)))
				}
			}
			// Replayed again by a store that did not get its acks, once
			// JetStream's duplicate window has passed (HQ refuses any
			// other message ID than <store>.<flow>).
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(waitLong):
				t.Fatal("publish acks did not arrive")
			}
			time.Sleep(3 * cfg.DuplicateWindow)
			for i := 1; i <= resent; i++ {
				pub("S001", i, wire.MsgID("S001", fmt.Sprint(i)))
			}
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(waitLong):
				t.Fatal("publish acks did not arrive")
			}
			total := func() float64 { return a.metrics.Counts().Ingested + b.metrics.Counts().Ingested }
			testenv.WaitFor(t, waitLong, "every sale stored", func() bool { return total() == float64(len(stores)*perStore) })
			dups := func() float64 { return a.metrics.Counts().Duplicates + b.metrics.Counts().Duplicates }
			testenv.WaitFor(t, waitLong, "every replay counted", func() bool { return dups() == resent })
			consumerSettled(t, js)

			for _, s := range stores {
				if c := count(t, a.store, s); c != perStore {
					t.Errorf("%s: %d rows, want %d", s, c, perStore)
				}
				var flows []string
				for i := 1; i <= perStore; i++ {
					flows = append(flows, fmt.Sprint(i))
				}
				if have, _ := b.store.Have(context.Background(), s, flows); len(have) != perStore {
					t.Errorf("%s: Have lists %d of %d", s, len(have), perStore)
				}
			}
			ca, cb := a.metrics.Counts(), b.metrics.Counts()
			t.Logf("hq-a stored %v, hq-b stored %v", ca.Ingested, cb.Ingested)
			if ca.Conflicts+cb.Conflicts != 0 || ca.Ingested == 0 || cb.Ingested == 0 {
				t.Errorf("counts: a %+v, b %+v (both should have shared the load, without conflicts)", ca, cb)
			}
		})
	}
}

// TestHaveRequest: posedge-hq answers what it holds for a store.
func TestHaveRequest(t *testing.T) {
	n := testenv.StartNATS(t)
	cfg := testConfig(n.URL(), "sqlite://"+t.TempDir()+"/hq.db")
	h := startReceiver(t, cfg, "hq-a")
	startReceiver(t, cfg, "hq-b") // shares the queue group: one answer per request
	_, js := connect(t, n.URL())
	for _, f := range []string{"1", "2", "4"} {
		publish(t, js, txnMsg("S001", "S001."+f, sale{store: "S001", flow: f, cents: 1}.body()))
	}
	testenv.WaitFor(t, waitLong, "sales stored", func() bool { return count(t, h.store, "S001") == 3 })

	// Each store asks with its own reply prefix, as posedge does.
	inbox := storeInboxes(t, n.URL(), "S001", "S002")
	ask := func(subject string, req any) wire.HaveReply {
		t.Helper()
		data, _ := json.Marshal(req)
		msg, err := inbox[strings.TrimPrefix(subject, wire.HaveSubjectPrefix+".")].Request(subject, data, 10*time.Second)
		if err != nil {
			t.Fatalf("request %s: %v", subject, err)
		}
		var r wire.HaveReply
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			t.Fatalf("reply %s: %v", msg.Data, err)
		}
		return r
	}
	r := ask(wire.HaveSubject("S001"), wire.HaveRequest{StoreID: "S001", FlowNos: []string{"1", "2", "3", "4", "5"}})
	if r.Error != "" || strings.Join(r.Have, ",") != "1,2,4" {
		t.Fatalf("have = %+v", r)
	}
	if r := ask(wire.HaveSubject("S002"), wire.HaveRequest{StoreID: "S002", FlowNos: []string{"1"}}); r.Error != "" || len(r.Have) != 0 {
		t.Fatalf("have S002 = %+v", r)
	}
	if r := ask(wire.HaveSubject("S002"), wire.HaveRequest{StoreID: "S001", FlowNos: []string{"1"}}); r.Error == "" || len(r.Have) != 0 {
		t.Fatalf("another store's request answered: %+v", r)
	}
	if r := ask(wire.HaveSubject("S001"), "nonsense"); r.Error == "" {
		t.Fatalf("bad request answered: %+v", r)
	}
	// With the PubAck sequences: the three sales are read (the consumer's
	// ack floor is past them), so what HQ lacks is not pending: flow 3
	// at a sequence read, flow 5 at one past the stream's last.
	if r := ask(wire.HaveSubject("S001"), wire.HaveRequest{StoreID: "S001", FlowNos: []string{"1", "3", "5"}, Seqs: []uint64{1, 2, 99}}); r.Error != "" ||
		strings.Join(r.Have, ",") != "1" || len(r.Pending) != 0 {
		t.Fatalf("have with seqs = %+v, want have [1], nothing pending", r)
	}
	if r := ask(wire.HaveSubject("S001"), wire.HaveRequest{StoreID: "S001", FlowNos: []string{"1", "3"}, Seqs: []uint64{1}}); r.Error == "" {
		t.Fatalf("seqs not paired with flow_nos answered: %+v", r)
	}

	// A reply subject outside the asking store's inbox is never answered
	// (issue 22 finding 4: HQ overwrote a catalog key so): not another
	// store's inbox, not the catalog bucket, not a bare _INBOX.
	got := make(chan string, 10)
	for _, subj := range []string{wire.InboxPrefix("S002") + ".x", "$KV.POS_CATALOG._all.6901234567890", "_INBOX.x", "pos.txn.S002"} {
		sub, err := inbox["S002"].Subscribe(subj, func(m *nats.Msg) { got <- m.Subject })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Unsubscribe() })
	}
	inbox["S002"].Flush()
	for _, reply := range []string{wire.InboxPrefix("S002") + ".x", "$KV.POS_CATALOG._all.6901234567890", "_INBOX.x", "pos.txn.S002"} {
		m := &nats.Msg{Subject: wire.HaveSubject("S001"), Reply: reply, Data: []byte(`{"store_id":"S001","flow_nos":["1"]}`)}
		if err := inbox["S001"].PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	// Answered in order: once S001's own request is, the others were handled.
	if r := ask(wire.HaveSubject("S001"), wire.HaveRequest{StoreID: "S001", FlowNos: []string{"1"}}); strings.Join(r.Have, ",") != "1" {
		t.Fatalf("have after the foreign replies = %+v", r)
	}
	inbox["S002"].Flush()
	select {
	case s := <-got:
		t.Fatalf("HQ answered S001's request on %s", s)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestReceiverNATSOutage: the receiver waits for NATS, reports not ready
// meanwhile, and resumes after NATS comes back.
func TestReceiverNATSOutage(t *testing.T) {
	n := testenv.StartNATS(t)
	n.Stop()
	cfg := testConfig(n.URL(), "sqlite://"+t.TempDir()+"/hq.db")
	log := testLogger(t)
	store := openStore(t, cfg.Database, hqdb.StoreOptions{Logger: log})
	m := hq.NewMetrics(store, "test", log)
	recv := hq.NewReceiver(cfg, store, m, log, "")
	admin := httptest.NewServer(hq.NewAdminHandler(store, recv, m, log))
	defer admin.Close()
	client := hqClient(t)
	health := func() int {
		r, err := client.Get(admin.URL + "/healthz")
		if err != nil {
			return 0
		}
		r.Body.Close()
		return r.StatusCode
	}
	if c := health(); c != http.StatusServiceUnavailable {
		t.Fatalf("/healthz before start = %d", c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recv.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	if c := health(); c != http.StatusServiceUnavailable {
		t.Fatalf("/healthz with NATS down = %d", c)
	}
	n.Start()
	testenv.WaitFor(t, waitLong, "/healthz 200 once NATS is up", func() bool { return health() == http.StatusOK })
	_, js := connect(t, n.URL())
	publish(t, js, txnMsg("S001", "S001.1", sale{store: "S001", flow: "1", cents: 1}.body()))
	testenv.WaitFor(t, waitLong, "first sale", func() bool { return count(t, store, "S001") == 1 })

	n.Stop()
	testenv.WaitFor(t, waitLong, "/healthz 503 with NATS down", func() bool { return health() == http.StatusServiceUnavailable })
	n.Start()
	testenv.WaitFor(t, waitLong, "/healthz 200 again", func() bool { return health() == http.StatusOK })
	testenv.WaitFor(t, waitLong, "second sale", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		js.PublishMsg(ctx, txnMsg("S001", "S001.2", sale{store: "S001", flow: "2", cents: 1}.body()))
		return count(t, store, "S001") == 2
	})
}

// TestAdmin: watermark, completeness and metrics over HTTP.
func TestAdmin(t *testing.T) {
	n := testenv.StartNATS(t)
	cfg := testConfig(n.URL(), "sqlite://"+t.TempDir()+"/hq.db")
	h := startReceiver(t, cfg, "hq")
	admin := httptest.NewServer(hq.NewAdminHandler(h.store, h.recv, h.metrics, testLogger(t)))
	defer admin.Close()
	_, js := connect(t, n.URL())
	created := time.Now().Add(-90 * time.Second).UTC().Truncate(time.Second)
	for _, f := range []string{"8", "9", "10"} {
		publish(t, js, txnMsg("S001", "S001."+f, sale{store: "S001", flow: f, cents: 100, created: created}.body()))
	}
	mf, _ := json.Marshal(wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: created.Format("20060102"), Sales: 4, SalesCents: 400})
	mm := nats.NewMsg(wire.ManifestSubject(wire.DefaultSubjectPrefix, "S001"))
	mm.Data = mf
	publish(t, js, mm)
	testenv.WaitFor(t, waitLong, "sales and manifest stored", func() bool { return h.metrics.Counts().Ingested == 4 })

	client := hqClient(t)
	get := func(path string, wantCode int, v any) string {
		t.Helper()
		ctx := context.Background()
		if wantCode >= 400 { // the 4xx asked for here are for requests meant to break the description
			ctx = testenv.Invalid(ctx)
		}
		req, err := http.NewRequestWithContext(ctx, "GET", admin.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		body, _ := io.ReadAll(r.Body)
		if r.StatusCode != wantCode {
			t.Fatalf("GET %s = %d %s, want %d", path, r.StatusCode, body, wantCode)
		}
		if v != nil {
			if err := json.Unmarshal(body, v); err != nil {
				t.Fatalf("GET %s: %v: %s", path, err, body)
			}
		}
		return string(body)
	}
	get("/healthz", http.StatusOK, nil)
	var w struct {
		StoreID       string     `json:"store_id"`
		MaxFlowNo     string     `json:"max_flow_no"`
		Count         int64      `json:"count"`
		LastCreatedAt *time.Time `json:"last_created_at"`
	}
	get("/v1/stores/S001/watermark", http.StatusOK, &w)
	if w.StoreID != "S001" || w.MaxFlowNo != "10" || w.Count != 3 || w.LastCreatedAt == nil || !w.LastCreatedAt.Equal(created) {
		t.Fatalf("watermark = %+v", w)
	}
	if body := get("/v1/stores/S404/watermark", http.StatusOK, nil); !strings.Contains(body, `"count":0`) || !strings.Contains(body, `"last_created_at":null`) {
		t.Fatalf("watermark of an unknown store = %s", body)
	}
	get("/v1/stores/bad%20id/watermark", http.StatusBadRequest, nil)
	get("/nope", http.StatusNotFound, nil)

	var rep hqdb.Report
	get("/v1/completeness", http.StatusOK, &rep)
	if len(rep.Incomplete) != 1 || rep.Incomplete[0].Manifest.Sales != 4 || rep.Incomplete[0].Stored.Sales != 3 {
		t.Fatalf("completeness = %+v", rep)
	}

	metrics := get("/metrics", http.StatusOK, nil)
	for _, want := range []string{
		`posedge_hq_ingested_total{type="txn"} 3`,
		`posedge_hq_ingested_total{type="manifest"} 1`,
		`posedge_hq_store_transactions{store_id="S001"} 3`,
		`posedge_hq_store_lag_seconds{store_id="S001"}`,
		`posedge_hq_batch_commit_seconds_count`,
		`posedge_hq_build_info{version="test"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// faultyStore is a real Store that refuses batches while failBatches is
// positive, and always refuses any batch holding the poison flow number.
type faultyStore struct {
	hqdb.Store
	mu          sync.Mutex
	failBatches int
	poison      string
}

var errInjected = errors.New("injected database failure")

func (f *faultyStore) InsertBatch(ctx context.Context, msgs []hqdb.Msg) ([]hqdb.Outcome, error) {
	f.mu.Lock()
	fail := f.failBatches > 0
	if fail {
		f.failBatches--
	}
	f.mu.Unlock()
	if fail {
		return nil, errInjected
	}
	for _, m := range msgs {
		if m.Kind == hqdb.KindTxn && m.Txn.FlowNo == f.poison {
			return nil, errInjected
		}
	}
	return f.Store.InsertBatch(ctx, msgs)
}

// TestReceiverDatabaseRefuses: a batch the database refuses is not acked
// and comes back; a message the database always refuses is terminated
// after a few deliveries without holding back the others.
func TestReceiverDatabaseRefuses(t *testing.T) {
	n := testenv.StartNATS(t)
	cfg := testConfig(n.URL(), "sqlite://"+t.TempDir()+"/hq.db")
	cfg.AckWait = 2 * time.Second
	log := testLogger(t)
	real := openStore(t, cfg.Database, hqdb.StoreOptions{Logger: log})
	store := &faultyStore{Store: real, failBatches: 3, poison: "13"}
	m := hq.NewMetrics(store, "test", log)
	recv := hq.NewReceiver(cfg, store, m, log, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recv.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	_, js := connect(t, n.URL())
	for i := 1; i <= 40; i++ {
		f := fmt.Sprint(i)
		publish(t, js, txnMsg("S001", "S001."+f, sale{store: "S001", flow: f, cents: 1}.body()))
	}
	testenv.WaitFor(t, waitLong, "all but the poison stored", func() bool { return count(t, real, "S001") == 39 })
	testenv.WaitFor(t, waitLong, "poison terminated", func() bool { return m.Counts().Rejected == 1 })
	consumerSettled(t, js)
	if c := m.Counts(); c.BatchErrors < 3 || c.Ingested != 39 || c.Duplicates != 0 {
		t.Fatalf("counts = %+v", c)
	}
	if have, _ := real.Have(context.Background(), "S001", []string{"13"}); len(have) != 0 {
		t.Fatalf("poison stored")
	}
}

// One store's have requests are limited per process (issue 22 finding 6:
// a store could load HQ's database without bound): past the limit HQ
// answers an error, counted as result "limited", and another store is
// still answered.
func TestHaveRequestsLimitedPerStore(t *testing.T) {
	n := testenv.StartNATS(t)
	cfg := testConfig(n.URL(), "sqlite://"+t.TempDir()+"/hq.db")
	startReceiver(t, cfg, "hq-a")
	conns := map[string]*nats.Conn{}
	for _, s := range []string{"S001", "S002"} {
		c, err := nats.Connect(n.URL(), nats.CustomInboxPrefix(wire.InboxPrefix(s)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		conns[s] = c
	}
	ask := func(s string) wire.HaveReply {
		t.Helper()
		msg, err := conns[s].Request(wire.HaveSubject(s), []byte(`{"store_id":"`+s+`","flow_nos":["1"]}`), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var r wire.HaveReply
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	answered := 0
	for ; answered < 2000; answered++ {
		if r := ask("S001"); r.Error != "" {
			if !strings.Contains(r.Error, "have requests per store") {
				t.Fatalf("after %d: %+v", answered, r)
			}
			break
		}
	}
	if answered == 0 || answered >= 2000 {
		t.Fatalf("S001 was answered %d times in a row", answered)
	}
	if r := ask("S002"); r.Error != "" {
		t.Fatalf("S002 limited by S001's requests: %+v", r)
	}
}

// storeInboxes connects once per store with the store's own reply prefix
// (wire.InboxPrefix), as posedge does: HQ answers only there.
func storeInboxes(t *testing.T, url string, stores ...string) map[string]*nats.Conn {
	t.Helper()
	inbox := map[string]*nats.Conn{}
	for _, s := range stores {
		c, err := nats.Connect(url, nats.CustomInboxPrefix(wire.InboxPrefix(s)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		inbox[s] = c
	}
	return inbox
}
