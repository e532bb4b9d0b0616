package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// asyncErrors collects a connection's asynchronous errors (permission
// violations are reported so).
type asyncErrors struct {
	mu   sync.Mutex
	errs []string
}

func (a *asyncErrors) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	a.mu.Lock()
	a.errs = append(a.errs, err.Error())
	a.mu.Unlock()
}

func (a *asyncErrors) has(s string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range a.errs {
		if strings.Contains(strings.ToLower(e), strings.ToLower(s)) {
			return true
		}
	}
	return false
}

// securityDoc is the document whose NATS template the tests run.
const securityDoc = "../../docs/security.md"

// startHQ runs posedge-hq's receiver (stream, consumer, have answers)
// with the user hq of the documented template, on SQLite.
func startHQ(t *testing.T, url string) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	cfg := hq.DefaultConfig()
	cfg.NATSURL = url
	cfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "hq.db")
	st, err := hq.OpenStore(context.Background(), cfg.Database, hqdb.StoreOptions{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	recv := hq.NewReceiver(cfg, st, hq.NewMetrics(st, "test", log), log, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; st.Close() })
	testenv.WaitFor(t, wait, "posedge-hq ready", func() bool { return recv.Ready() == nil })
}

// On a real nats-server running the template of docs/security.md with
// stores S001 and S002 and posedge-hq's real receiver, store S001's
// replay works, while its credentials can neither publish as S002 (no
// pre-claimed flow numbers, no forged manifests), nor ask HQ about S002,
// nor read the replies meant for S002, nor aim a JetStream
// acknowledgement or one of HQ's answers at HQ's catalog bucket (issue
// 22 finding 4: both attacks overwrote a catalog key in the old
// one-account template).
func TestPerStorePermissions(t *testing.T) {
	const other = "S002"
	srv := testenv.StartNATSWithConfig(t, testenv.WithOperator(t, testenv.SecurityTemplate(t, securityDoc)))
	url := func(user string) string {
		return fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", strings.ToLower(user), testenv.DocumentedPassword, srv.Port)
	}
	// posedge-hq runs as the documented restricted user hq; the test
	// looks and sets the catalog up as the operator.
	startHQ(t, url("hq"))
	hnc, hjs := hqConn(t, url(testenv.OperatorUser))
	stream, err := hjs.Stream(context.Background(), wire.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	var askedAboutOther atomic.Int64
	hsub, err := hnc.Subscribe(wire.HaveSubject(other), func(m *nats.Msg) { askedAboutOther.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer hsub.Unsubscribe()
	// HQ's catalog, as posedge-hq's admin API writes it.
	kv, err := hjs.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "POS_CATALOG", History: 1})
	if err != nil {
		t.Fatal(err)
	}
	catalog := map[string]string{"_all.4000000000002": `{"name":"milk","price_cents":129}`, "_all.6901234567890": `{"name":"tea","price_cents":450}`}
	for k, v := range catalog {
		if _, err := kv.Put(context.Background(), k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}

	// S001's own replay, with S001's credentials, drains its backlog.
	j := openJournal(t)
	appendSales(t, j, 1, 30)
	r, _ := run(t, testConfig(url(store)), j, nil)
	testenv.WaitFor(t, wait, "S001's backlog drained through its restricted user", func() bool { return backlog(t, j) == 0 })
	checkStoredOnce(t, hjs, j, 1, 30)
	if st := r.Status(); st.LastError != "" && !st.Connected {
		t.Fatalf("replay status: %+v", st)
	}

	// S001's credentials, used by hand as an attacker would.
	// Finding 4's confused deputies first: a sale whose reply subject is
	// a catalog key (JetStream acknowledges it there) and a have request
	// likewise (HQ answers there). A legitimate request after each, on
	// the same connection, is answered only after the attack was handled.
	deputy, err := nats.Connect(url(store), nats.CustomInboxPrefix(wire.InboxPrefix(store)))
	if err != nil {
		t.Fatal(err)
	}
	defer deputy.Close()
	attacks := []*nats.Msg{
		{Subject: wire.TxnSubject(wire.DefaultSubjectPrefix, store), Reply: "$KV.POS_CATALOG._all.4000000000002", Data: []byte(`{}`)},
		{Subject: wire.HaveSubject(store), Reply: "$KV.POS_CATALOG._all.6901234567890", Data: []byte(`{"store_id":"S001","flow_nos":[]}`)},
		{Subject: wire.DeliverSubject(store), Reply: "$KV.POS_CATALOG._all.4000000000002", Data: []byte(`{}`)},
	}
	for _, m := range attacks {
		if err := deputy.PublishMsg(m); err != nil {
			t.Fatalf("publish %s: %v", m.Subject, err)
		}
		if _, err := deputy.Request(m.Subject, m.Data, 10*time.Second); err != nil {
			t.Fatalf("S001's own request on %s after the attack: %v", m.Subject, err)
		}
	}
	for k, v := range catalog {
		e, err := kv.Get(context.Background(), k)
		switch {
		case err != nil:
			t.Errorf("catalog %s after S001's replies: %v", k, err)
		case string(e.Value()) != v || e.Revision() > uint64(len(catalog)):
			t.Errorf("catalog %s overwritten through S001's reply subject: %s (revision %d)", k, e.Value(), e.Revision())
		}
	}
	var errs asyncErrors
	nc, err := nats.Connect(url(store), nats.CustomInboxPrefix(wire.InboxPrefix(store)), nats.ErrorHandler(errs.handler))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// Each refused publish waits for an ack that never comes: a context
	// of its own, or the first one's wait would leave the others unsent.
	publishCtx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	for _, subj := range []string{wire.TxnSubject(wire.DefaultSubjectPrefix, other), wire.ManifestSubject(wire.DefaultSubjectPrefix, other)} {
		m := nats.NewMsg(subj)
		m.Header.Set(wire.HeaderMsgID, wire.MsgID(other, "100000000000001"))
		m.Data = []byte(`{"store_id":"S002","flow_no":"100000000000001"}`)
		if _, err := js.PublishMsg(publishCtx(), m); err == nil {
			t.Errorf("S001 published on %s", subj)
		}
	}
	if _, err := nc.Request(wire.HaveSubject(other), []byte(`{"store_id":"S002","flow_nos":["100000000000001"]}`), time.Second); err == nil {
		t.Error("S001 got an answer about S002")
	}
	// Direct delivery as S002 is refused like its subject on the stream.
	fm := nats.NewMsg(wire.DeliverSubject(other))
	fm.Header.Set(wire.HeaderMsgID, wire.MsgID(other, "100000000000001"))
	fm.Data = []byte(`{"store_id":"S002","flow_no":"100000000000001"}`)
	if _, err := nc.RequestMsg(fm, time.Second); err == nil {
		t.Error("S001 delivered as S002")
	}
	// S001's own subject space is the subjects it uses, no more (issue
	// 22 item 9c): an arbitrary pos.txn.S001.<x> is refused.
	if _, err := js.Publish(publishCtx(), wire.TxnSubject(wire.DefaultSubjectPrefix, store)+".x", []byte(`{}`)); err == nil {
		t.Errorf("S001 published on %s.x", wire.TxnSubject(wire.DefaultSubjectPrefix, store))
	}
	// Subscriptions to S002's replies are refused; nothing reaches them.
	var stolen atomic.Int64
	for _, subj := range []string{wire.InboxPrefix(other) + ".>", "_INBOX.>", ">"} {
		if _, err := nc.Subscribe(subj, func(*nats.Msg) { stolen.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	nc.Flush()
	// S002's own request, with its own user, is answered: to S002 only.
	nc2, err := nats.Connect(url(other), nats.CustomInboxPrefix(wire.InboxPrefix(other)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	if _, err := nc2.Request(wire.HaveSubject(other), []byte(`{"store_id":"S002","flow_nos":[]}`), 5*time.Second); err != nil {
		t.Fatalf("S002's own request: %v", err)
	}

	testenv.WaitFor(t, 5*time.Second, "permission violations reported to S001", func() bool {
		return errs.has("permissions violation for publish to \"pos.txn.S002\"") &&
			errs.has("permissions violation for publish to \"posedge.hq.have.S002\"") &&
			errs.has("permissions violation for publish to \"posedge.hq.deliver.S002\"") &&
			errs.has("permissions violation for publish to \"pos.txn.S001.x\"") &&
			errs.has("permissions violation for subscription to \"_INBOX.S002.>\"")
	})
	if n := stolen.Load(); n != 0 {
		t.Errorf("S001's subscriptions received %d messages meant for others", n)
	}
	if n := askedAboutOther.Load(); n != 1 {
		t.Errorf("HQ was asked about S002 %d times, want 1 (by S002 itself)", n)
	}
	if _, err := stream.GetLastMsgForSubject(context.Background(), wire.TxnSubject(wire.DefaultSubjectPrefix, other)); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("the stream holds a message on S002's subject: %v", err)
	}
	if _, err := stream.GetLastMsgForSubject(context.Background(), wire.ManifestSubject(wire.DefaultSubjectPrefix, other)); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("the stream holds a manifest on S002's subject: %v", err)
	}

	// posedge-hq's own user did all of the above (stream, consumer,
	// have answers) and no more: as hq, publishing as a store, deleting
	// or purging the stream or the bucket is refused.
	msgsBefore := streamMsgs(t, hjs)
	var herrs asyncErrors
	hqnc, err := nats.Connect(url("hq"), nats.ErrorHandler(herrs.handler))
	if err != nil {
		t.Fatal(err)
	}
	defer hqnc.Close()
	refused := []string{wire.TxnSubject(wire.DefaultSubjectPrefix, store), "$JS.API.STREAM.DELETE." + wire.DefaultStream,
		"$JS.API.STREAM.PURGE." + wire.DefaultStream, "$JS.API.STREAM.DELETE.KV_POS_CATALOG", "$JS.API.STREAM.CREATE.OTHER"}
	for _, subj := range refused {
		if err := hqnc.Publish(subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	hqnc.Flush()
	testenv.WaitFor(t, 5*time.Second, "permission violations reported to hq", func() bool {
		for _, subj := range refused {
			if !herrs.has(fmt.Sprintf("permissions violation for publish to %q", subj)) {
				return false
			}
		}
		return true
	})
	// (S001's heartbeat may land meanwhile: fewer would be a purge.)
	if got := streamMsgs(t, hjs); got < msgsBefore {
		t.Errorf("the stream holds %d messages after hq's refused purge, had %d", got, msgsBefore)
	}
	if _, err := hjs.KeyValue(context.Background(), "POS_CATALOG"); err != nil {
		t.Errorf("the catalog bucket after hq's refused delete: %v", err)
	}
}

func streamMsgs(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	st, err := js.Stream(context.Background(), wire.DefaultStream)
	if err != nil {
		t.Fatalf("the stream: %v", err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
