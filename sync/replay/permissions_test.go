package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/wire"
)

// storePermissions is the per-store template of docs/security.md, for
// store id S: publish its own transactions, manifests, heartbeats and
// "have" requests; read its own replies only.
func storePermissions(s string) string { return testenv.StorePermissions(s) }

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

// On a real nats-server with two store users under the per-store
// template, store S001's replay works, while its credentials can neither
// publish as S002 (no pre-claimed flow numbers, no forged manifests),
// nor ask HQ about S002, nor read the replies meant for S002.
func TestPerStorePermissions(t *testing.T) {
	const other = "S002"
	srv := testenv.StartNATSWithConfig(t, fmt.Sprintf(`
accounts {
  POS {
    jetstream: enabled
    users [
      {user: "hq", password: "pw-hq"}
      %s
      %s
    ]
  }
}
`, storePermissions(store), storePermissions(other)))
	url := func(user string) string {
		return fmt.Sprintf("nats://%s:pw-%s@127.0.0.1:%d", strings.ToLower(user), user, srv.Port)
	}
	hqURL := fmt.Sprintf("nats://hq:pw-hq@127.0.0.1:%d", srv.Port)
	hnc, hjs := hqConn(t, hqURL)
	stream := createStream(t, hjs)
	hqHave(t, hnc, hjs) // answers S001's "have" requests
	var askedAboutOther atomic.Int64
	hsub, err := hnc.Subscribe(wire.HaveSubject(other), func(m *nats.Msg) {
		askedAboutOther.Add(1)
		m.Respond([]byte(`{"have":["100000000000001"]}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer hsub.Unsubscribe()

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
	var errs asyncErrors
	nc, err := nats.Connect(url(store), nats.CustomInboxPrefix(wire.InboxPrefix(store)), nats.ErrorHandler(errs.handler))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()

	for _, subj := range []string{wire.TxnSubject(wire.DefaultSubjectPrefix, other), wire.ManifestSubject(wire.DefaultSubjectPrefix, other)} {
		m := nats.NewMsg(subj)
		m.Header.Set(wire.HeaderMsgID, wire.MsgID(other, "100000000000001"))
		m.Data = []byte(`{"store_id":"S002","flow_no":"100000000000001"}`)
		if _, err := js.PublishMsg(ctx, m); err == nil {
			t.Errorf("S001 published on %s", subj)
		}
	}
	if _, err := nc.Request(wire.HaveSubject(other), []byte(`{"store_id":"S002","flow_nos":["100000000000001"]}`), time.Second); err == nil {
		t.Error("S001 got an answer about S002")
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
}
