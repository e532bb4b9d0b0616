package api

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/posedge/posedge/edge/reconcile"
	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/replay"
)

// The reconciliation and manifest routes the daemon used to add by
// hand: served by the admin API behind its Reconciler and
// ManifestPublisher, with the contract's error bodies.
func TestAdminJobRoutes(t *testing.T) {
	e := newEnv(t, envOpts{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := reconcile.New(reconcile.Config{Retention: 24 * time.Hour}, e.ledger, e.j, log, prometheus.NewRegistry())
	nats := testenv.StartNATS(t)
	rp, err := replay.New(replay.Config{StoreID: "S1", NATSURL: nats.URL()}, e.j, nil, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewAdmin(AdminDeps{Ledger: e.ledger, Reconciler: rec, Manifests: rp, Log: log}))
	t.Cleanup(srv.Close)
	admin := func(method, path string, invalid bool) resp {
		return e.InvalidIf(invalid).do(srv.URL, "", method, path, nil, nil)
	}

	e.putItem("R1", 250, 10)
	if r := e.sale("T01", "rec-1", sale1("R1", 2, 250)); r.status != 201 {
		t.Fatalf("sale: %d %s", r.status, r.body)
	}
	today := e.ledger.Today()
	cases := []struct {
		name, method, path string
		status             int
		code               string
		check              func(resp) bool
		invalid            bool // the date breaks the description's pattern
	}{
		{"no report before a run", "GET", "/admin/v1/reconcile", 404, "not_found", nil, false},
		{"reconcile a bad date", "POST", "/admin/v1/reconcile?date=2026-01-01", 400, "invalid_date", nil, true},
		{"reconcile today", "POST", "/admin/v1/reconcile", 200, "", func(r resp) bool {
			days, _ := r.json()["days"].([]any)
			return len(days) == 1 && days[0] == today && num(r.json()["differences"]) == 0
		}, false},
		{"the last report", "GET", "/admin/v1/reconcile", 200, "", func(r resp) bool {
			days, _ := r.json()["days"].([]any)
			return len(days) == 1 && days[0] == today
		}, false},
		{"manifest of a bad date", "POST", "/admin/v1/sync/manifest?date=20261399", 400, "invalid_date", nil, false}, // a well-formed date that is none
		{"manifest while HQ is not connected", "POST", "/admin/v1/sync/manifest", 503, "hq_unavailable", func(r resp) bool {
			return r.json()["error"].(map[string]any)["message"] != ""
		}, false},
	}
	for _, c := range cases {
		r := admin(c.method, c.path, c.invalid)
		if r.status != c.status || r.code() != c.code || (c.check != nil && !c.check(r)) {
			t.Fatalf("%s: %d %s", c.name, r.status, r.body)
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: Content-Type %q", c.name, ct)
		}
	}

	// Without a Reconciler or ManifestPublisher the routes do not exist.
	bare := httptest.NewServer(NewAdmin(AdminDeps{Ledger: e.ledger, Log: log}))
	t.Cleanup(bare.Close)
	for _, p := range []string{"/admin/v1/reconcile", "/admin/v1/sync/manifest"} {
		if r := e.do(bare.URL, "", "POST", p, nil, nil); r.status != 404 || r.code() != "not_found" {
			t.Fatalf("POST %s without its job: %d %s", p, r.status, r.body)
		}
	}
}
