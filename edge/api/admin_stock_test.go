package api

import "testing"

// POST /admin/v1/items/{barcode}/stock-adjustments: 201 with the stock
// after it, the same key replays; every refusal has its status and code
// and changes nothing.
func TestStockAdjustmentEndpoint(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.putItem("A", 150, 10)
	path := "/admin/v1/items/A/stock-adjustments"
	r := e.admin("POST", path, `{"delta": 5, "reason": "receiving", "idempotency_key": "grn-1"}`)
	if r.status != 201 || r.json()["stock"] != 15.0 || r.json()["delta"] != 5.0 || r.json()["barcode"] != "A" || r.json()["adjustment_id"] == "" {
		t.Fatalf("adjustment: %d %s", r.status, r.body)
	}
	again := e.admin("POST", path, `{"delta": 5, "reason": "receiving", "idempotency_key": "grn-1"}`)
	if again.status != 201 || string(again.body) != string(r.body) {
		t.Fatalf("replay: %d %s, want the first answer %s", again.status, again.body, r.body)
	}
	tests := []struct {
		name, path, body string
		status           int
		code             string
		invalid          bool // the body breaks the description
	}{
		{"fractional delta", path, `{"delta": 1.5, "reason": "count", "idempotency_key": "k1"}`, 400, "invalid_qty", true},
		{"string delta", path, `{"delta": "2", "reason": "count", "idempotency_key": "k1"}`, 400, "invalid_qty", true},
		{"no delta", path, `{"reason": "count", "idempotency_key": "k1"}`, 400, "invalid_qty", true},
		{"zero delta", path, `{"delta": 0, "reason": "count", "idempotency_key": "k1"}`, 400, "invalid_qty", true},
		{"unknown reason", path, `{"delta": 1, "reason": "gift", "idempotency_key": "k1"}`, 400, "invalid_reason", true},
		{"unknown field", path, `{"delta": 1, "reason": "count", "idempotency_key": "k1", "stock": 3}`, 400, "unknown_field", true},
		{"no key", path, `{"delta": 1, "reason": "count"}`, 400, "invalid_idempotency_key", true},
		{"below zero", path, `{"delta": -16, "reason": "count", "idempotency_key": "k2"}`, 409, "insufficient_stock", false},
		{"unknown item", "/admin/v1/items/NOPE/stock-adjustments", `{"delta": 1, "reason": "receiving", "idempotency_key": "k3"}`, 404, "item_not_found", false},
		{"key reused", path, `{"delta": 6, "reason": "receiving", "idempotency_key": "grn-1"}`, 422, "idempotency_key_reused", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.InvalidIf(tc.invalid).admin("POST", tc.path, tc.body)
			if r.status != tc.status || r.code() != tc.code {
				t.Errorf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	if got := e.stock("A"); got != 15 {
		t.Errorf("stock %d, want 15", got)
	}
}
