package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/wire"
)

const store = "S001"

// wait is how long a test polls for an outcome: generous, the CI box is
// small and busy.
const wait = 60 * time.Second

func openJournal(t testing.TB) *journal.Journal {
	t.Helper()
	j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func flowNo(n int) string { return fmt.Sprintf("1%015d", n) }

// txn is a sale as the edge journals it, its body the JSON the terminal got.
func txn(n int, terminal, kind string, cents int64, pad int) journal.Txn {
	created := time.Date(2026, 11, 30, 10, 0, 0, n, time.UTC)
	body := map[string]any{"flow_no": flowNo(n), "store_id": store, "terminal_id": terminal, "kind": kind,
		"total_cents": cents, "tender": "cash", "created_at": created.Format(time.RFC3339Nano),
		"lines": []map[string]any{{"barcode": "4006381333931", "qty": 1, "price_cents": cents}}}
	if pad > 0 {
		body["note"] = strings.Repeat("x", pad)
	}
	b, _ := json.Marshal(body)
	return journal.Txn{FlowNo: flowNo(n), Seq: int64(n), TerminalID: terminal, IdemKey: fmt.Sprintf("k%d", n),
		Fingerprint: "fp", Kind: kind, Tender: "cash", TotalCents: cents, BusinessDay: "20261130",
		BusinessHour: "10", CreatedAt: created, Body: b, Applied: true,
		Lines: []journal.Line{{Barcode: "4006381333931", Qty: 1, PriceCents: cents}}}
}

// appendSales journals sales from..to (inclusive), concurrently so they
// share commits as the tills' sales do.
func appendSales(t testing.TB, j *journal.Journal, from, to int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, to-from+1)
	sem := make(chan struct{}, 64)
	for n := from; n <= to; n++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs <- j.Append(ctx, txn(n, "T01", "sale", 199, 0))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func backlog(t testing.TB, j *journal.Journal) int64 {
	t.Helper()
	s, err := j.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.Backlog
}

// hqConn is the test's own view of HQ's NATS.
func hqConn(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// createStream is what posedge-hq does at start.
func createStream(t testing.TB, js jetstream.JetStream) jetstream.Stream {
	t.Helper()
	s, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: wire.DefaultStream,
		Subjects: []string{wire.DefaultSubjectPrefix + ".>"}, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type storedTxn struct {
	count int
	body  []byte
}

// storedTxns reads the store's transaction messages of the stream by
// Nats-Msg-Id, failing on a message without the contract's headers.
func storedTxns(t testing.TB, js jetstream.JetStream) map[string]*storedTxn {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, wire.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*storedTxn{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != wire.TxnSubject(wire.DefaultSubjectPrefix, store) {
			continue
		}
		id := m.Header.Get(wire.HeaderMsgID)
		if m.Header.Get(wire.HeaderSchema) != wire.SchemaV1 || id == "" {
			t.Fatalf("message %d headers %v", seq, m.Header)
		}
		st := out[id]
		if st == nil {
			st = &storedTxn{body: m.Data}
			out[id] = st
		}
		st.count++
	}
	return out
}

// checkStoredOnce asserts the stream holds rows from..to of the journal,
// each once, with the journaled body byte for byte, and nothing else.
func checkStoredOnce(t testing.TB, js jetstream.JetStream, j *journal.Journal, from, to int, skip ...int) {
	t.Helper()
	got := storedTxns(t, js)
	want := 0
	for n := from; n <= to; n++ {
		if contains(skip, n) {
			continue
		}
		want++
		id := wire.MsgID(store, flowNo(n))
		st := got[id]
		if st == nil {
			t.Fatalf("%s not in the stream", id)
		}
		if st.count != 1 {
			t.Fatalf("%s stored %d times", id, st.count)
		}
		row, err := j.ByFlow(context.Background(), flowNo(n))
		if err != nil || row == nil {
			t.Fatalf("journal row %d: %v", n, err)
		}
		if string(row.Body) != string(st.body) {
			t.Fatalf("%s body %s, journaled %s", id, st.body, row.Body)
		}
		if row.State != journal.StateAcked {
			t.Fatalf("%s in the stream, journal state %s", id, row.State)
		}
	}
	if len(got) != want {
		t.Fatalf("stream holds %d transactions, want %d", len(got), want)
	}
}

func contains(s []int, n int) bool {
	for _, v := range s {
		if v == n {
			return true
		}
	}
	return false
}

func testConfig(url string) Config {
	return Config{StoreID: store, NATSURL: url, BatchSize: 50, AckTimeout: 10 * time.Second,
		Idle: 50 * time.Millisecond, MaxBackoff: time.Second, Version: "test"}
}

// run starts a replayer and stops it with the test.
func run(t testing.TB, cfg Config, j *journal.Journal, lim Limiter) (*Replayer, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := New(cfg, j, lim, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("Run did not return after its context ended")
		}
	})
	return r, reg
}

func TestRowsReachTheStreamOnceAndAreAckedOnlyAfterTheirAck(t *testing.T) {
	srv := testenv.StartNATS(t)
	_, js := hqConn(t, srv.URL())
	j := openJournal(t)
	appendSales(t, j, 1, 120)

	// No stream yet (posedge-hq not started): publishes get no ack, so no
	// row may be marked synced.
	r, reg := run(t, testConfig(srv.URL()), j, nil)
	testenv.WaitFor(t, wait, "publish attempts without a stream, reported", func() bool {
		return metric(t, reg, "posedge_replay_publish_errors_total", "kind", errNoStream) > 0 &&
			strings.Contains(r.Status().LastError, "is posedge-hq running")
	})
	if n := backlog(t, j); n != 120 {
		t.Fatalf("backlog %d with no stream to ack, want 120", n)
	}
	if st := r.Status(); !st.Connected || st.Acked != 0 || st.LastError == "" {
		t.Fatalf("status without a stream: %+v", st)
	}

	createStream(t, js)
	r.Kick()
	testenv.WaitFor(t, wait, "backlog drained", func() bool { return backlog(t, j) == 0 })
	checkStoredOnce(t, js, j, 1, 120)
	if got := metric(t, reg, "posedge_replay_acked_total"); got != 120 {
		t.Fatalf("acked_total %v", got)
	}

	// More sales while connected are sent as they come.
	appendSales(t, j, 121, 130)
	testenv.WaitFor(t, wait, "new sales sent", func() bool { return backlog(t, j) == 0 })
	checkStoredOnce(t, js, j, 1, 130)
	st := r.Status()
	if st.LastSyncAt == nil || st.LastError != "" || st.Acked != 130 || st.RatePerSec <= 0 {
		t.Fatalf("status after drain: %+v", st)
	}
}

func TestWANOutageKeepsTheBacklogAndDrainsItOnceBack(t *testing.T) {
	srv := testenv.StartNATS(t)
	_, js := hqConn(t, srv.URL())
	createStream(t, js)
	j := openJournal(t)
	r, reg := run(t, testConfig(srv.URL()), j, nil)

	appendSales(t, j, 1, 20)
	testenv.WaitFor(t, wait, "first sales sent", func() bool { return backlog(t, j) == 0 })

	srv.Stop()
	testenv.WaitFor(t, wait, "replayer sees the WAN down", func() bool { return !r.Status().Connected })
	if v := metric(t, reg, "posedge_hq_connected"); v != 0 {
		t.Fatalf("posedge_hq_connected %v while down", v)
	}
	appendSales(t, j, 21, 150)
	if n := backlog(t, j); n != 130 {
		t.Fatalf("backlog %d during the outage, want 130", n)
	}

	srv.Start()
	testenv.WaitFor(t, wait, "backlog drained after the outage", func() bool { return backlog(t, j) == 0 })
	checkStoredOnce(t, js, j, 1, 150)
	if !r.Status().Connected || metric(t, reg, "posedge_hq_connected") != 1 {
		t.Fatalf("status after the outage: %+v", r.Status())
	}
	if n := metric(t, reg, "posedge_replay_published_total"); n < 150 {
		t.Fatalf("published_total %v", n)
	}
}

// TestResumedReplayAsksHQFirst: rows sent before a restart or outage
// whose ack never came are offered to HQ's "have" query first, and only
// those HQ does not hold are resent.
func TestResumedReplayAsksHQFirst(t *testing.T) {
	srv := testenv.StartNATS(t)
	nc, js := hqConn(t, srv.URL())
	createStream(t, js)
	j := openJournal(t)
	appendSales(t, j, 1, 40)
	ctx := context.Background()
	// Rows 1-30 were published before (no ack seen); HQ holds the odd ones.
	var sent []string
	for n := 1; n <= 30; n++ {
		sent = append(sent, flowNo(n))
	}
	if err := j.MarkSent(ctx, sent...); err != nil {
		t.Fatal(err)
	}
	var asked sync.Map
	sub, err := nc.Subscribe(wire.HaveSubject(store), func(m *nats.Msg) {
		var req wire.HaveRequest
		if err := json.Unmarshal(m.Data, &req); err != nil || req.StoreID != store {
			m.Respond([]byte(`{"error":"bad request"}`))
			return
		}
		var rep wire.HaveReply
		for _, f := range req.FlowNos {
			asked.Store(f, true)
			var n int
			fmt.Sscanf(f, "%d", &n)
			if n%2 == 1 {
				rep.Have = append(rep.Have, f)
			}
		}
		b, _ := json.Marshal(rep)
		m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	r, _ := run(t, testConfig(srv.URL()), j, nil)
	testenv.WaitFor(t, wait, "backlog drained", func() bool { return backlog(t, j) == 0 })
	var odd []int
	for n := 1; n <= 30; n += 2 {
		odd = append(odd, n)
	}
	checkStoredOnce(t, js, j, 1, 40, odd...)
	for _, n := range odd {
		if row, _ := j.ByFlow(ctx, flowNo(n)); row.State != journal.StateAcked {
			t.Fatalf("row %d confirmed by HQ is %s", n, row.State)
		}
	}
	for n := 31; n <= 40; n++ {
		if _, ok := asked.Load(flowNo(n)); ok {
			t.Fatalf("asked HQ about row %d, never sent before", n)
		}
	}
	if st := r.Status(); st.Confirmed != 15 || st.Acked != 40 {
		t.Fatalf("status %+v", st)
	}
}

func TestReplayObeysTheSyncPolicy(t *testing.T) {
	srv := testenv.StartNATS(t)
	_, js := hqConn(t, srv.URL())
	createStream(t, js)
	j := openJournal(t)
	appendSales(t, j, 1, 100)

	lim := &rateLimiter{l: rate.NewLimiter(2, 1)} // 2 batches per second
	cfg := testConfig(srv.URL())
	cfg.BatchSize = 10
	start := time.Now()
	run(t, cfg, j, lim)
	testenv.WaitFor(t, wait, "backlog drained", func() bool { return backlog(t, j) == 0 })
	took := time.Since(start)
	// 10 batches, the first at once, then one every 500ms: 4.5s at least.
	if took < 4*time.Second {
		t.Fatalf("100 rows in batches of 10 at 2 batches/s took %v, want >= 4s", took)
	}
	if n := lim.hits.Load(); n != 10 {
		t.Fatalf("%d hits of the sync policy for 10 batches", n)
	}
	checkStoredOnce(t, js, j, 1, 100)
	t.Logf("100 rows, batches of 10 at 2/s: %v", took)
}

// rateLimiter is a real token bucket standing for the store-wide policy.
type rateLimiter struct {
	l    *rate.Limiter
	hits atomic.Int64
}

func (r *rateLimiter) WaitStoreSync(ctx context.Context) error {
	r.hits.Add(1)
	return r.l.Wait(ctx)
}

func TestRefusedRowsAreQuarantinedAndDoNotBlockTheRest(t *testing.T) {
	srv := testenv.StartNATS(t) // max_payload 1 MiB
	_, js := hqConn(t, srv.URL())
	createStream(t, js)
	j := openJournal(t)
	ctx := context.Background()
	for n := 1; n <= 12; n++ {
		tx := txn(n, "T01", "sale", 100, 0)
		switch n {
		case 3: // larger than the server's max payload
			tx = txn(n, "T01", "sale", 100, 1<<20+10)
		case 8: // a body HQ could never store: another store's sale
			tx.Body = []byte(strings.Replace(string(tx.Body), store, "S999", 1))
		}
		if err := j.Append(ctx, tx); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testConfig(srv.URL())
	cfg.BatchSize = 4
	r, reg := run(t, cfg, j, nil)
	testenv.WaitFor(t, wait, "backlog drained", func() bool { return backlog(t, j) == 0 })
	checkStoredOnce(t, js, j, 1, 12, 3, 8)
	q, err := j.Quarantined(ctx)
	if err != nil || len(q) != 2 {
		t.Fatalf("quarantine %+v %v", q, err)
	}
	reasons := map[string]string{q[0].FlowNo: q[0].Reason, q[1].FlowNo: q[1].Reason}
	if !strings.Contains(reasons[flowNo(3)], "too large") || !strings.Contains(reasons[flowNo(8)], "store_id") {
		t.Fatalf("quarantine reasons %v", reasons)
	}
	if got := metric(t, reg, "posedge_replay_quarantined_total"); got != 2 {
		t.Fatalf("quarantined_total %v", got)
	}
	r.refreshStats(ctx)
	if st := r.Status(); st.Quarantined != 2 || st.Backlog != 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestKickSendsAtOnce(t *testing.T) {
	srv := testenv.StartNATS(t)
	_, js := hqConn(t, srv.URL())
	createStream(t, js)
	j := openJournal(t)
	cfg := testConfig(srv.URL())
	cfg.Idle = time.Hour
	r, _ := run(t, cfg, j, nil)
	testenv.WaitFor(t, wait, "connected and idle", func() bool {
		st := r.Status()
		return st.Connected && st.LastSyncAt != nil
	})
	appendSales(t, j, 1, 5)
	r.Kick()
	testenv.WaitFor(t, wait, "sales sent after Kick", func() bool { return backlog(t, j) == 0 })
	checkStoredOnce(t, js, j, 1, 5)
}

func TestHeartbeatAndManifest(t *testing.T) {
	srv := testenv.StartNATS(t)
	nc, js := hqConn(t, srv.URL())
	createStream(t, js)
	j := openJournal(t)
	ctx := context.Background()
	for n, tx := range []journal.Txn{
		txn(1, "T01", "sale", 1000, 0), txn(2, "T02", "sale", 250, 0), txn(3, "T01", "sale", 500, 0),
		txn(4, "T01", "refund", 300, 0), txn(5, "T02", "sale", 50, 0),
	} {
		if err := j.Append(ctx, tx); err != nil {
			t.Fatal(n, err)
		}
	}
	other := txn(6, "T01", "sale", 999, 0)
	other.BusinessDay = "20261201"
	if err := j.Append(ctx, other); err != nil {
		t.Fatal(err)
	}

	hbs := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(wire.HeartbeatSubject(wire.DefaultSubjectPrefix, store), hbs)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	mfs := make(chan *nats.Msg, 16)
	msub, err := nc.ChanSubscribe(wire.ManifestSubject(wire.DefaultSubjectPrefix, store), mfs)
	if err != nil {
		t.Fatal(err)
	}
	defer msub.Unsubscribe()

	cfg := testConfig(srv.URL())
	cfg.HeartbeatEvery = 200 * time.Millisecond
	cfg.JournalRetention = 30*24*time.Hour + 23*time.Hour // said in whole days, rounded down
	r, _ := run(t, cfg, j, nil)

	select {
	case m := <-hbs:
		var hb wire.Heartbeat
		if err := json.Unmarshal(m.Data, &hb); err != nil || hb.StoreID != store || hb.Version != "test" ||
			hb.JournalRetentionDays != 30 || m.Header.Get(wire.HeaderSchema) != wire.SchemaV1 {
			t.Fatalf("heartbeat %s %v %v", m.Data, m.Header, err)
		}
	case <-time.After(wait):
		t.Fatal("no heartbeat")
	}

	testenv.WaitFor(t, wait, "connected", func() bool { return r.Status().Connected })
	if err := r.PublishManifest(ctx, "20261130"); err != nil {
		t.Fatal(err)
	}
	got := map[string]wire.Manifest{}
	for len(got) < 2 {
		select {
		case m := <-mfs:
			var mf wire.Manifest
			if err := json.Unmarshal(m.Data, &mf); err != nil {
				t.Fatal(err)
			}
			got[mf.TerminalID] = mf
		case <-time.After(wait):
			t.Fatalf("manifests received: %v", got)
		}
	}
	want := map[string]wire.Manifest{
		"T01": {StoreID: store, TerminalID: "T01", Date: "20261130", Sales: 2, SalesCents: 1500, Refunds: 1,
			RefundCents: 300, FirstFlowNo: flowNo(1), LastFlowNo: flowNo(4)},
		"T02": {StoreID: store, TerminalID: "T02", Date: "20261130", Sales: 2, SalesCents: 300,
			FirstFlowNo: flowNo(2), LastFlowNo: flowNo(5)},
	}
	for id, w := range want {
		g := got[id]
		if g.SentAt == "" {
			t.Fatalf("manifest %s without sent_at", id)
		}
		g.SentAt = ""
		if g != w {
			t.Fatalf("manifest %s\n got %+v\nwant %+v", id, g, w)
		}
	}
	if err := r.PublishManifest(ctx, "2026-11-30"); err == nil {
		t.Fatal("a malformed day was accepted")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	j := openJournal(t)
	_, err := New(Config{CertFile: "/nonexistent/cert.pem"}, j, nil, nil, nil)
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, key := range []string{"store_id", "hq.nats_url", "hq.cert_file and hq.key_file", "hq.cert_file:"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
}

// metric is the value of a counter or gauge series of reg.
func metric(t testing.TB, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// hqHave answers the store's "have" query from what the stream holds,
// as posedge-hq answers from its database.
func hqHave(t testing.TB, nc *nats.Conn, js jetstream.JetStream) *sync.Map {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var held sync.Map
	c, err := js.OrderedConsumer(ctx, wire.DefaultStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{wire.TxnSubject(wire.DefaultSubjectPrefix, store)}})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) { held.Store(m.Headers().Get(wire.HeaderMsgID), true) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	sub, err := nc.Subscribe(wire.HaveSubject(store), func(m *nats.Msg) {
		var req wire.HaveRequest
		var rep wire.HaveReply
		if err := json.Unmarshal(m.Data, &req); err != nil {
			rep.Error = err.Error()
		}
		for _, f := range req.FlowNos {
			if _, ok := held.Load(wire.MsgID(req.StoreID, f)); ok {
				rep.Have = append(rep.Have, f)
			}
		}
		b, _ := json.Marshal(rep)
		m.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	return &held
}

// TestOutageMidDrainStoresEachOnce: HQ's server dies while a backlog is
// draining; after it is back every sale is stored once.
func TestOutageMidDrainStoresEachOnce(t *testing.T) {
	srv := testenv.StartNATS(t)
	nc, js := hqConn(t, srv.URL())
	createStream(t, js)
	hqHave(t, nc, js)
	j := openJournal(t)
	const rows = 2000
	appendSales(t, j, 1, rows)
	cfg := testConfig(srv.URL())
	r, reg := run(t, cfg, j, &rateLimiter{l: rate.NewLimiter(10, 1)}) // 500 rows/s: seconds of margin to stop the server mid-drain
	testenv.WaitFor(t, wait, "drain under way", func() bool { return backlog(t, j) < rows*3/4 })
	srv.Stop()
	testenv.WaitFor(t, wait, "replayer sees the WAN down", func() bool { return !r.Status().Connected })
	left := backlog(t, j)
	if left == 0 {
		t.Fatal("the backlog drained before the outage; nothing tested")
	}
	srv.Start()
	testenv.WaitFor(t, wait, "backlog drained after the outage", func() bool { return backlog(t, j) == 0 })
	checkStoredOnce(t, js, j, 1, rows)
	st := r.Status()
	t.Logf("backlog at the outage %d, published %v for %d rows, confirmed by HQ %d",
		left, metric(t, reg, "posedge_replay_published_total"), rows, st.Confirmed)
}

// TestAckTimeoutIsAmbiguous: acks that come too late leave the rows
// unsynced; they are never marked done on a timeout, but resent with
// the same Nats-Msg-Id or confirmed by HQ's have query, and stored once.
func TestAckTimeoutIsAmbiguous(t *testing.T) {
	srv := testenv.StartNATS(t)
	nc, js := hqConn(t, srv.URL())
	createStream(t, js)
	held := hqHave(t, nc, js)
	j := openJournal(t)
	appendSales(t, j, 1, 30)
	cfg := testConfig(srv.URL())
	cfg.AckTimeout = time.Microsecond // every ack arrives after the client gave up
	r, reg := run(t, cfg, j, nil)
	testenv.WaitFor(t, wait, "backlog drained", func() bool { return backlog(t, j) == 0 })
	checkStoredOnce(t, js, j, 1, 30)
	st := r.Status()
	if st.Confirmed == 0 || metric(t, reg, "posedge_replay_publish_errors_total", "kind", errTimeout) == 0 {
		t.Fatalf("status %+v: expected timeouts and HQ confirmations", st)
	}
	n := 0
	held.Range(func(any, any) bool { n++; return true })
	if n != 30 {
		t.Fatalf("HQ saw %d messages", n)
	}
}

// A cluster URL list is dialled server by server, and the error of an
// unreachable HQ does not print the credentials in it.
func TestUnreachableClusterErrorHidesCredentials(t *testing.T) {
	j := openJournal(t)
	url := fmt.Sprintf("nats://posedge:hunter2@127.0.0.1:%d,nats://posedge:hunter2@127.0.0.1:%d",
		testenv.FreePort(t), testenv.FreePort(t))
	r, _ := run(t, testConfig(url), j, nil)
	testenv.WaitFor(t, wait, "a connection error", func() bool { return r.Status().LastError != "" })
	msg := r.Status().LastError
	if strings.Contains(msg, "hunter2") || !strings.Contains(msg, "nats://xxxxx@127.0.0.1") {
		t.Errorf("last error = %q, want the URLs with their credentials hidden", msg)
	}
}
