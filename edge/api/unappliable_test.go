package api

import (
	"context"
	"strings"
	"testing"
)

// A degraded-mode sale Redis refuses to apply is set aside, counted in a
// metric, listed by the admin API and, once the cause is fixed, retried.
func TestJournalQuarantineListAndRetry(t *testing.T) {
	e := newEnv(t, envOpts{})
	ctx := context.Background()
	e.putItem("X", 100, 10)
	e.putItem("Y", 100, 10)
	e.ledger.SetRedisDown(true)
	poison := e.sale("T01", "p1", sale1("X", 2, 100))
	fine := e.sale("T01", "f1", sale1("Y", 1, 100))
	if poison.status != 201 || fine.status != 201 {
		t.Fatalf("degraded sales: %s / %s", poison.body, fine.body)
	}
	itemKeys, err := e.rdb.Keys(ctx, "*item:X").Result()
	if err != nil || len(itemKeys) != 1 {
		t.Fatalf("%v %v", itemKeys, err)
	}
	e.rdb.HSet(ctx, itemKeys[0], "stock", "1e3")
	if err := e.ledger.Repair(ctx); err != nil {
		t.Fatalf("repair blocked by an unappliable transaction: %v", err)
	}
	e.ledger.SetRedisDown(false)
	if e.stock("Y") != 9 {
		t.Fatalf("stock of Y %d, want 9", e.stock("Y"))
	}
	list := e.admin("GET", "/admin/v1/journal/quarantine", nil)
	if list.status != 200 || !strings.Contains(string(list.body), `"flow_no":"`+poison.flow()+`"`) || strings.Contains(string(list.body), fine.flow()) {
		t.Fatalf("list: %d %s", list.status, list.body)
	}
	m := e.admin("GET", "/metrics", nil)
	if !strings.Contains(string(m.body), "posedge_unappliable_transactions_total 1") {
		t.Fatalf("metric missing:\n%s", m.body)
	}
	for _, bad := range []struct {
		body, code string
		invalid    bool // the description rejects it too
	}{
		{`{"flow_nos":["x"]}`, "invalid_flow_no", true},
		{`{"flow_nos":[],"flow_nos":[]}`, "invalid_json", false}, // a duplicate key: invisible to a JSON Schema
		{`{"FLOW_NOS":[]}`, "unknown_field", true},
	} {
		if r := e.InvalidIf(bad.invalid).admin("POST", "/admin/v1/journal/quarantine/retry", bad.body); r.status != 400 || r.code() != bad.code {
			t.Fatalf("retry %s: %d %s", bad.body, r.status, r.body)
		}
	}
	e.rdb.HSet(ctx, itemKeys[0], "stock", "10")
	r := e.admin("POST", "/admin/v1/journal/quarantine/retry", `{"flow_nos":["`+poison.flow()+`"]}`)
	if r.status != 200 || num(r.json()["retried"]) != 1 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	if n, err := e.ledger.ApplyDegraded(ctx); err != nil || n != 1 {
		t.Fatalf("apply after retry: %d %v", n, err)
	}
	if e.stock("X") != 8 {
		t.Fatalf("stock of X %d, want 8", e.stock("X"))
	}
	if list := e.admin("GET", "/admin/v1/journal/quarantine", nil); list.status != 200 || strings.TrimSpace(string(list.body)) != `{"transactions":[]}` {
		t.Fatalf("list after retry: %q", list.body)
	}
}
