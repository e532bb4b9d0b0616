package hq_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// testFleet runs the fleet view (contract §7) against a real database:
// what each store sent must come back in its own entry, and nothing of
// one store may leak into another's.
func testFleet(t *testing.T, open opener) {
	s, _ := open(t, hqdb.StoreOptions{SilentAfter: 5 * time.Minute})
	ctx := context.Background()

	// S001: two sales, one conflicting re-send, a heartbeat whose clock
	// runs 3 s ahead of HQ's receive time, an incomplete day.
	insert(t, s, sale{store: "S001", flow: "1", cents: 100}.msg(t, t0), sale{store: "S001", flow: "2", cents: 200}.msg(t, t0))
	insert(t, s, sale{store: "S001", flow: "2", cents: 999, terminal: "T02"}.msg(t, t0.Add(time.Second)))
	hb := wire.Heartbeat{StoreID: "S001", SentAt: t0.Add(63 * time.Second).Format(time.RFC3339), Backlog: 7,
		OldestUnsent: t0.Add(-time.Hour).Format(time.RFC3339), Version: "v1.2.3", HeartbeatFormat: wire.HeartbeatFormat2}
	insert(t, s, heartbeatMsg(t, hb, t0.Add(time.Minute)))
	insert(t, s, manifestMsg(t, wire.Manifest{StoreID: "S001", TerminalID: "T01", Date: "20260520", Sales: 3, SalesCents: 600,
		SentAt: t0.Add(time.Minute).Format(time.RFC3339)}, t0.Add(time.Minute)))
	// S002: one sale long ago, no heartbeat: silent, offset unknown.
	insert(t, s, sale{store: "S002", flow: "1", cents: 50, created: t0.Add(-time.Hour)}.msg(t, t0.Add(-time.Hour)))

	now := t0.Add(2 * time.Minute)
	fleet, err := s.Fleet(ctx, now)
	if err != nil {
		t.Fatalf("Fleet: %v", err)
	}
	if len(fleet) != 2 || fleet[0].StoreID != "S001" || fleet[1].StoreID != "S002" {
		t.Fatalf("fleet = %+v, want S001 and S002 in order", fleet)
	}
	a, b := fleet[0], fleet[1]
	if a.Transactions != 2 || a.Conflicts != 1 || a.Version != "v1.2.3" || a.Backlog != 7 ||
		!a.OldestUnsentAt.Equal(t0.Add(-time.Hour)) || !a.HasHeartbeat || a.ClockOffsetMS != 3000 ||
		a.IncompleteDays != 1 || a.Silent || !a.LastHeartbeatAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("S001 = %+v", a)
	}
	if b.Transactions != 1 || b.Conflicts != 0 || b.HasHeartbeat || b.Version != "" || b.Backlog != 0 ||
		b.IncompleteDays != 0 || !b.Silent {
		t.Errorf("S002 = %+v", b)
	}
	// The JSON of a store without a heartbeat says so with nulls, never
	// with a zero time or a zero offset that would read as "in sync".
	var m map[string]any
	raw, _ := json.Marshal(b)
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"last_heartbeat_at", "clock_offset_ms", "oldest_unsent_at"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("S002 %s = %v (present %v), want null", k, v, ok)
		}
	}
}

// TestFleetAdmin asks the fleet over posedge-hq's admin handler, each
// exchange checked against docs/openapi-hq.yaml: a store heard from is
// listed and found, one never heard from is 404 not_found, a malformed ID
// 400.
func TestFleetAdmin(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			s := openStore(t, be.dsn(t), hqdb.StoreOptions{})
			now := time.Now().UTC()
			insert(t, s, sale{store: "S010", flow: "1", cents: 100, created: now}.msg(t, now))
			insert(t, s, heartbeatMsg(t, wire.Heartbeat{StoreID: "S010", SentAt: now.Format(time.RFC3339), Version: "v9",
				HeartbeatFormat: wire.HeartbeatFormat2}, now))
			h := hq.NewAdminHandler(s, readyAlways{}, hq.NewMetrics(s, "test", testLogger(t)), testLogger(t))

			code, body := do(t, h, "GET", "/v1/stores", "")
			list, _ := body["stores"].([]any)
			if code != 200 || len(list) != 1 {
				t.Fatalf("GET /v1/stores = %d %v", code, body)
			}
			if e, _ := list[0].(map[string]any); e["store_id"] != "S010" || e["version"] != "v9" || e["transactions"] != float64(1) || e["silent"] != false {
				t.Errorf("entry = %v", e)
			}
			if code, body := do(t, h, "GET", "/v1/stores/S010", ""); code != 200 || body["store_id"] != "S010" {
				t.Errorf("GET /v1/stores/S010 = %d %v", code, body)
			}
			if code, body := do(t, h, "GET", "/v1/stores/S999", ""); code != 404 || errCode(body) != "not_found" {
				t.Errorf("GET /v1/stores/S999 = %d %v", code, body)
			}
			if code, body := doInvalid(t, h, "GET", "/v1/stores/bad.id", ""); code != 400 || errCode(body) != "invalid_store_id" {
				t.Errorf("GET /v1/stores/bad.id = %d %v", code, body)
			}
		})
	}
}

// readyAlways is a receiver that is always ready: the fleet routes never
// ask it.
type readyAlways struct{}

func (readyAlways) Ready() error { return nil }
