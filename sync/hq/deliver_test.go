package hq_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/wire"
)

// TestDirectDelivery: posedge.hq.deliver.<store> takes a store's
// transaction outside the stream with the stream's checks — subject
// store = body store = Nats-Msg-Id store and flow, the money screened —
// stores it once, answers only on the asking store's own inbox, and
// limits each store on its own.
func TestDirectDelivery(t *testing.T) {
	n := testenv.StartNATS(t)
	cfg := testConfig(n.URL(), "sqlite://"+t.TempDir()+"/hq.db")
	cfg.MaxSaleCents = 100000
	h := startReceiver(t, cfg, "hq-a")
	startReceiver(t, cfg, "hq-b") // shares the queue group: one answer per request
	inbox := storeInboxes(t, n.URL(), "S001", "S002")
	deliver := func(store, msgID string, body []byte) wire.DeliverReply {
		t.Helper()
		m := nats.NewMsg(wire.DeliverSubject(store))
		m.Data = body
		if msgID != "" {
			m.Header.Set(wire.HeaderMsgID, msgID)
		}
		m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
		rep, err := inbox[store].RequestMsg(m, 10*time.Second)
		if err != nil {
			t.Fatalf("deliver on %s: %v", m.Subject, err)
		}
		var r wire.DeliverReply
		if err := json.Unmarshal(rep.Data, &r); err != nil {
			t.Fatalf("reply %s: %v", rep.Data, err)
		}
		return r
	}
	for _, c := range []struct {
		name, store, msgID string
		body               []byte
		outcome, err       string // the reply's
	}{
		{"a sale of the store", "S001", "S001.1", sale{store: "S001", flow: "1", cents: 250}.body(), "inserted", ""},
		{"the same again", "S001", "S001.1", sale{store: "S001", flow: "1", cents: 250}.body(), "duplicate", ""},
		{"another body under its flow", "S001", "S001.1", sale{store: "S001", flow: "1", cents: 999}.body(), "conflict", ""},
		{"over max_sale_cents", "S001", "S001.2", sale{store: "S001", flow: "2", cents: 100001}.body(), "quarantined", ""},
		{"another store's body", "S001", "S002.3", sale{store: "S002", flow: "3", cents: 250}.body(), "", "store_mismatch"},
		{"another store's ID", "S001", "S002.3", sale{store: "S001", flow: "3", cents: 250}.body(), "", "msg_id_mismatch"},
		{"another flow's ID", "S001", "S001.4", sale{store: "S001", flow: "3", cents: 250}.body(), "", "msg_id_mismatch"},
		{"no ID", "S001", "", sale{store: "S001", flow: "3", cents: 250}.body(), "", "msg_id_mismatch"},
		{"not a transaction", "S001", "S001.3", []byte(`{"store_id":"S001"}`), "", "invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := deliver(c.store, c.msgID, c.body)
			if r.Outcome != c.outcome || (c.err == "") != (r.Error == "") || !strings.Contains(r.Error, c.err) {
				t.Fatalf("reply %+v, want outcome %q error %q", r, c.outcome, c.err)
			}
		})
	}
	// Stored once, with the first body; the conflict and the quarantine
	// kept aside; nothing of the refused ones.
	if got := count(t, h.store, "S001"); got != 1 {
		t.Errorf("S001 holds %d transactions, want 1", got)
	}
	body, err := h.store.Transaction(context.Background(), "S001", "1")
	if err != nil || string(body) != string(sale{store: "S001", flow: "1", cents: 250}.body()) {
		t.Errorf("stored body %s, %v", body, err)
	}
	if q, err := h.store.Quarantined(context.Background(), "S001"); err != nil || len(q) != 1 {
		t.Errorf("quarantined %d, %v; want 1", len(q), err)
	}
	if got := count(t, h.store, "S002"); got != 0 {
		t.Errorf("S002 holds %d transactions through S001's deliveries", got)
	}

	// A reply subject outside the store's inbox: neither stored nor
	// answered (HQ's user would publish where the store may not).
	got := make(chan string, 10)
	foreign := []string{wire.InboxPrefix("S002") + ".x", "$KV.POS_CATALOG._all.6901234567890", "_INBOX.x", ""}
	for _, subj := range foreign[:3] {
		sub, err := inbox["S002"].Subscribe(subj, func(m *nats.Msg) { got <- m.Subject })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sub.Unsubscribe() })
	}
	inbox["S002"].Flush()
	for i, reply := range foreign {
		m := nats.NewMsg(wire.DeliverSubject("S001"))
		m.Reply = reply
		flow := string(rune('5' + i))
		m.Header.Set(wire.HeaderMsgID, "S001."+flow)
		m.Data = sale{store: "S001", flow: flow, cents: 100}.body()
		if err := inbox["S001"].PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	if r := deliver("S001", "S001.9", sale{store: "S001", flow: "9", cents: 100}.body()); r.Outcome != "inserted" {
		t.Fatalf("S001's own delivery after the foreign replies: %+v", r)
	}
	inbox["S002"].Flush()
	select {
	case s := <-got:
		t.Fatalf("HQ answered S001's delivery on %s", s)
	case <-time.After(200 * time.Millisecond):
	}
	if got := count(t, h.store, "S001"); got != 2 {
		t.Errorf("S001 holds %d transactions after the foreign replies, want 2 (flows 1 and 9)", got)
	}

	// Limited per store: S001's flood does not limit S002.
	limited := false
	for i := 0; i < 2000 && !limited; i++ {
		r := deliver("S001", "", []byte(`{}`))
		limited = strings.Contains(r.Error, "deliveries per store")
	}
	if !limited {
		t.Fatal("S001 was never limited")
	}
	if r := deliver("S002", "S002.1", sale{store: "S002", flow: "1", cents: 100}.body()); r.Outcome != "inserted" {
		t.Fatalf("S002 limited by S001's deliveries: %+v", r)
	}
}
