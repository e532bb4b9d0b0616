package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/internal/testenv/wireschema"
	"github.com/posedge/posedge/sync/wire"
)

// The transaction and manifest messages a real store publishes — a sale
// with receipt and cashier, a late sale from a batch, a refund, the day's
// manifests — read back from HQ's stream, each valid against its schema
// in docs/wire; and the schema refuses a real body made wrong.
func TestWireMessagesMatchTheirSchemas(t *testing.T) {
	txnSchema, manifestSchema := wireschema.Compile(t, "transaction"), wireschema.Compile(t, "manifest")
	s := startStore(t, testenv.StoreOptions{Terminals: 2})
	s.PutItem("4006381333931", 350, 100)

	sale := testenv.SaleBody("4006381333931", 2, 340)
	sale["receipt_no"], sale["cashier_id"] = "R-000001", "C07"
	r := s.T("T01", "POST", "/v1/sales", sale, map[string]string{"Idempotency-Key": "wire-1"})
	if r.Status != 201 {
		t.Fatalf("sale: %d %s %v", r.Status, r.Body, r.Err)
	}
	var recorded struct {
		FlowNo string `json:"flow_no"`
	}
	if err := json.Unmarshal(r.Body, &recorded); err != nil {
		t.Fatal(err)
	}
	late := testenv.SaleBody("4006381333931", 1, 350)
	late["idempotency_key"] = "wire-2"
	late["occurred_at"] = time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	if r := s.T("T02", "POST", "/v1/sales/batch", map[string]any{"sales": []any{late}}, nil); r.Status != 200 ||
		!strings.Contains(string(r.Body), `"status":201`) {
		t.Fatalf("batch: %d %s %v", r.Status, r.Body, r.Err)
	}
	refund := map[string]any{"original_flow_no": recorded.FlowNo,
		"lines": []map[string]any{{"barcode": "4006381333931", "qty": 1}}, "total_cents": 340}
	if r := s.T("T02", "POST", "/v1/refunds", refund, map[string]string{"Idempotency-Key": "wire-3"}); r.Status != 201 {
		t.Fatalf("refund: %d %s %v", r.Status, r.Body, r.Err)
	}

	nc, err := nats.Connect(s.NATS.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu        sync.Mutex
		txns      = map[string][]byte{}
		manifests = map[string][]byte{}
		headers   []string
	)
	txnSubject := wire.TxnSubject(wire.DefaultSubjectPrefix, s.StoreID)
	manifestSubject := wire.ManifestSubject(wire.DefaultSubjectPrefix, s.StoreID)
	testenv.WaitFor(t, 60*time.Second, "HQ's stream", func() bool {
		_, err := js.Stream(ctx, wire.DefaultStream)
		return err == nil
	})
	c, err := js.OrderedConsumer(ctx, wire.DefaultStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{txnSubject, manifestSubject}})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		mu.Lock()
		defer mu.Unlock()
		headers = append(headers, m.Headers().Get(wire.HeaderSchema))
		if m.Subject() == manifestSubject {
			var mf wire.Manifest
			_ = json.Unmarshal(m.Data(), &mf)
			manifests[mf.TerminalID] = m.Data()
			return
		}
		var tx wire.Txn
		_ = json.Unmarshal(m.Data(), &tx)
		txns[tx.FlowNo] = m.Data()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	testenv.WaitFor(t, 60*time.Second, "the three transactions at HQ's stream", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(txns) == 3
	})
	if r := s.Admin("POST", "/admin/v1/sync/manifest", nil); r.Status != 200 {
		t.Fatalf("manifest: %d %s %v", r.Status, r.Body, r.Err)
	}
	testenv.WaitFor(t, 60*time.Second, "both terminals' manifests", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(manifests) == 2
	})

	mu.Lock()
	defer mu.Unlock()
	kinds := map[string]int{}
	for flow, body := range txns {
		if err := wireschema.Validate(txnSchema, body); err != nil {
			t.Errorf("transaction %s against docs/wire/transaction.schema.json: %v\n%s", flow, err, body)
		}
		var tx wire.Txn
		_ = json.Unmarshal(body, &tx)
		kinds[tx.Kind]++
	}
	if kinds["sale"] != 2 || kinds["refund"] != 1 {
		t.Errorf("kinds %v, want 2 sales and 1 refund", kinds)
	}
	for id, body := range manifests {
		if err := wireschema.Validate(manifestSchema, body); err != nil {
			t.Errorf("manifest of %s against docs/wire/manifest.schema.json: %v\n%s", id, err, body)
		}
	}
	for _, h := range headers {
		if h != wire.SchemaV1 {
			t.Errorf("a message with %s %q, want %q", wire.HeaderSchema, h, wire.SchemaV1)
		}
	}

	// The schema is no rubber stamp: the real sale made wrong is refused.
	var real map[string]any
	if err := json.Unmarshal(txns[recorded.FlowNo], &real); err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func(map[string]any){
		"cents as a string":       func(m map[string]any) { m["total_cents"] = "680" },
		"no occurred_at":          func(m map[string]any) { delete(m, "occurred_at") },
		"a field not described":   func(m map[string]any) { m["discount_cents"] = 10 },
		"a sale with an original": func(m map[string]any) { m["original_flow_no"] = recorded.FlowNo },
		"a fractional price": func(m map[string]any) {
			m["lines"] = []any{map[string]any{"barcode": "4006381333931", "qty": 2, "price_cents": 3.4}}
		},
	} {
		m := map[string]any{}
		for k, v := range real {
			m[k] = v
		}
		spoil(m)
		b, _ := json.Marshal(m)
		if err := wireschema.Validate(txnSchema, b); err == nil {
			t.Errorf("%s: the transaction schema accepted %s", name, b)
		}
	}
}
