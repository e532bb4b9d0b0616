package hq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/posedge/posedge/internal/strictjson"
)

const (
	// catalogBodyBytes bounds a catalog PUT body.
	catalogBodyBytes = 64 << 10
	// catalogWriteTimeout bounds one write while NATS is unreachable:
	// the caller gets a 503 rather than a request that hangs.
	catalogWriteTimeout = 5 * time.Second
)

// NewCatalogHandler serves the item master admin API (contract §6):
//
//	PUT    /admin/v1/catalog/{barcode}              {"name","price_cents","active"[,"store_id"]} → 200 {"key","revision"}
//	DELETE /admin/v1/catalog/{barcode}[?store_id=S] writes "active": false → 200 {"key","revision"}
func NewCatalogHandler(cat *Catalog, maxCents int64, log *slog.Logger) http.Handler {
	h := &catalogAdmin{cat: cat, maxCents: maxCents, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /admin/v1/catalog/{barcode}", h.put)
	mux.HandleFunc("DELETE /admin/v1/catalog/{barcode}", h.delete)
	// Everything else under the prefix answers as the rest of the admin
	// API does (a JSON not_found), not with the router's plain-text 404
	// or 405 a client would fail to decode.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

type catalogAdmin struct {
	cat      *Catalog
	maxCents int64
	log      *slog.Logger
}

func (h *catalogAdmin) put(w http.ResponseWriter, r *http.Request) {
	bc := r.PathValue("barcode")
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, catalogBodyBytes))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body exceeds %d bytes", catalogBodyBytes))
		return
	}
	storeID, it, fe := decodeCatalogPut(b)
	if fe == nil {
		fe = ValidateCatalogEntry(storeID, bc, it, h.maxCents)
	}
	if fe != nil {
		writeError(w, http.StatusBadRequest, fe.Code, fe.Message)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), catalogWriteTimeout)
	defer cancel()
	key, rev, err := h.cat.Put(ctx, storeID, bc, it)
	if err != nil {
		h.log.Error("catalog put", "barcode", bc, "store_id", storeID, "err", err)
		writeError(w, http.StatusServiceUnavailable, "nats_unavailable", "the catalog bucket did not take the write: "+err.Error())
		return
	}
	h.log.Info("catalog entry written", "key", key, "revision", rev, "price_cents", it.PriceCents, "active", it.Active)
	writeJSON(w, http.StatusOK, map[string]any{"key": key, "revision": rev})
}

func (h *catalogAdmin) delete(w http.ResponseWriter, r *http.Request) {
	bc := r.PathValue("barcode")
	storeID := r.URL.Query().Get("store_id")
	if !barcodePattern.MatchString(bc) {
		writeError(w, http.StatusBadRequest, "invalid_barcode", "barcode must be 1-64 of [A-Za-z0-9._-]")
		return
	}
	if storeID != "" && (!validStoreID(storeID) || storeID == AllStores) {
		writeError(w, http.StatusBadRequest, "invalid_store_id", "store_id must be 1-32 of [A-Za-z0-9_-] and not "+AllStores)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), catalogWriteTimeout)
	defer cancel()
	key, rev, err := h.cat.Deactivate(ctx, storeID, bc)
	switch {
	case errors.Is(err, ErrCatalogKeyNotFound):
		writeError(w, http.StatusNotFound, "item_not_found", "the catalog has no entry "+key)
		return
	case err != nil:
		h.log.Error("catalog delete", "key", key, "err", err)
		writeError(w, http.StatusServiceUnavailable, "nats_unavailable", "the catalog bucket did not take the write: "+err.Error())
		return
	}
	h.log.Info("catalog entry deactivated", "key", key, "revision", rev)
	writeJSON(w, http.StatusOK, map[string]any{"key": key, "revision": rev})
}

// decodeCatalogPut reads a PUT body strictly: exact field names, no
// duplicate key, integers only, nothing after the object. "active" is
// true when absent.
func decodeCatalogPut(b []byte) (string, CatalogItem, *CatalogFieldError) {
	it := CatalogItem{Active: true}
	fields, fe := strictObject(b)
	if fe != nil {
		return "", it, fe
	}
	var storeID string
	for name, raw := range fields {
		var err error
		switch name {
		case "name":
			err = json.Unmarshal(raw, &it.Name)
			if err != nil {
				return "", it, &CatalogFieldError{"invalid_name", "name must be a string"}
			}
		case "price_cents":
			n, perr := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
			if perr != nil {
				return "", it, &CatalogFieldError{"invalid_amount", "price_cents must be a whole, non-negative number of cents"}
			}
			it.PriceCents = n
		case "active":
			if json.Unmarshal(raw, &it.Active) != nil {
				return "", it, &CatalogFieldError{"invalid_json", "active must be true or false"}
			}
		case "store_id":
			if json.Unmarshal(raw, &storeID) != nil || storeID == "" {
				return "", it, &CatalogFieldError{"invalid_store_id", "store_id must be a non-empty string"}
			}
		default:
			return "", it, &CatalogFieldError{"unknown_field", fmt.Sprintf("unknown field %q", name)}
		}
	}
	if _, ok := fields["price_cents"]; !ok {
		return "", it, &CatalogFieldError{"invalid_amount", "price_cents is required"}
	}
	return storeID, it, nil
}

// catalogPutFields are the keys of a catalog PUT body.
var catalogPutFields = &strictjson.Fields{Names: []string{"name", "price_cents", "active", "store_id"}}

// strictObject splits a JSON object into its fields, refusing duplicate
// keys (which encoding/json would silently merge), keys equal but for
// case and trailing data (internal/strictjson).
func strictObject(b []byte) (map[string]json.RawMessage, *CatalogFieldError) {
	bad := func(msg string) *CatalogFieldError { return &CatalogFieldError{"invalid_json", msg} }
	if err := strictjson.Check(b, catalogPutFields); err != nil {
		if errors.Is(err, strictjson.ErrKeyCase) {
			return nil, &CatalogFieldError{"unknown_field", err.Error()}
		}
		return nil, bad("malformed JSON: " + err.Error())
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil || out == nil {
		return nil, bad("the body must be a JSON object")
	}
	return out, nil
}
