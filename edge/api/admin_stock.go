package api

import (
	"encoding/json"
	"net/http"

	"github.com/posedge/posedge/edge/ledger"
)

// stockAdjustment is POST /admin/v1/items/{barcode}/stock-adjustments
// (contract §6): {"delta", "reason", "idempotency_key"} → 201 with the
// stock after it; the same key again answers the same.
func (a *adminAPI) stockAdjustment(w http.ResponseWriter, r *http.Request) {
	b, e := readBody(r, maxBodyBytes)
	if e != nil {
		fail(w, a.Log, e)
		return
	}
	adj, e := parseStockAdjustment(b)
	if e != nil {
		fail(w, a.Log, e)
		return
	}
	bc := r.PathValue("barcode")
	res, err := a.Ledger.AdjustStock(r.Context(), bc, adj)
	if err != nil {
		fail(w, a.Log, err)
		return
	}
	a.Log.Info("stock adjusted", "barcode", bc, "delta", adj.Delta, "reason", adj.Reason, "stock", res.Stock,
		"adjustment_id", res.AdjustmentID, "by", r.RemoteAddr)
	if a.SyncNow != nil {
		a.SyncNow() // on its way to HQ with the next replay round
	}
	writeJSON(w, http.StatusCreated, res)
}

// parseStockAdjustment decodes an adjustment's body strictly; the reason
// and key are checked by the ledger, which owns their rules.
func parseStockAdjustment(b []byte) (ledger.StockAdjustment, *ledger.Error) {
	var in struct {
		Delta          *json.RawMessage `json:"delta"`
		Reason         string           `json:"reason"`
		IdempotencyKey string           `json:"idempotency_key"`
	}
	if e := decodeStrict(b, &in); e != nil {
		return ledger.StockAdjustment{}, e
	}
	if in.Delta == nil {
		return ledger.StockAdjustment{}, ledger.Errorf(ledger.KindInvalid, "invalid_qty", "delta is required")
	}
	delta, ok := intField(*in.Delta, -ledger.MaxStockDelta, ledger.MaxStockDelta)
	if !ok {
		return ledger.StockAdjustment{}, ledger.Errorf(ledger.KindInvalid, "invalid_qty", "delta must be a whole, non-zero number")
	}
	return ledger.StockAdjustment{Delta: delta, Reason: in.Reason, IdempotencyKey: in.IdempotencyKey}, nil
}
