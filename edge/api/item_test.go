package api

import (
	"testing"

	"github.com/posedge/posedge/internal/testenv"
)

// A lookup is one Redis round trip (the item read pipelined with the
// limiter's decision), answers 404 and 400 as before, and while Redis is
// down (degraded, or killed) answers the daemon's copy marked stale.
func TestItemLookup(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("I1", 250, 7)
	e.T("T01", "GET", "/v1/items/I1", nil, nil) // the script is cached from here on
	var rt testenv.RoundTrips
	e.rdb.AddHook(&rt)

	tests := []struct {
		name      string
		before    func()
		path      string
		status    int
		code      string
		stale     bool
		wantTrips int64 // -1: not counted (Redis is gone)
		invalid   bool  // the path breaks the description
	}{
		{"known item", nil, "/v1/items/I1", 200, "", false, 1, false},
		{"unknown item", nil, "/v1/items/NOPE", 404, "item_not_found", false, 1, false},
		{"invalid barcode", nil, "/v1/items/bad%21", 400, "invalid_barcode", false, 1, true},
		{"degraded: the daemon's copy", func() { e.ledger.SetRedisDown(true) }, "/v1/items/I1", 200, "", true, 1, false},
		{"Redis killed: the daemon's copy", func() { e.ledger.SetRedisDown(false); e.redis.KillNode(0) }, "/v1/items/I1", 200, "", true, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before()
			}
			before := rt.N()
			r := e.InvalidIf(tt.invalid).T("T01", "GET", tt.path, nil, nil)
			if r.status != tt.status || r.code() != tt.code {
				t.Fatalf("%d %s, want %d %q", r.status, r.body, tt.status, tt.code)
			}
			if tt.status == 200 {
				m := r.json()
				if m["stale"] != tt.stale || num(m["price_cents"]) != 250 || num(m["stock"]) != 7 || m["name"] != "n I1" {
					t.Errorf("item %s, want price 250, stock 7, stale %v", r.body, tt.stale)
				}
			}
			if trips := rt.N() - before; tt.wantTrips >= 0 && trips != tt.wantTrips {
				t.Errorf("%d Redis round trips, want %d", trips, tt.wantTrips)
			}
		})
	}
}
