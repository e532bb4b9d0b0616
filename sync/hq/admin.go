package hq

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/posedge/posedge/internal/httpguard"
	"github.com/posedge/posedge/internal/jsonhttp"
	"github.com/posedge/posedge/sync/hqdb"
)

// Readiness tells why the receiver is not consuming yet, or nil.
type Readiness interface {
	Ready() error
}

// NewAdminHandler serves posedge-hq's admin API:
//
//	GET /healthz                             200 once NATS, the stream and the tables are there, else 503
//	GET /readyz                              the same
//	GET /metrics                             Prometheus text format
//	GET /v1/stores/{store_id}/watermark      the store's high-water mark (zeros for an unknown store)
//	GET /v1/completeness                     days whose manifests differ from the stored rows, silent stores
func NewAdminHandler(store hqdb.Store, recv Readiness, metrics *Metrics, log *slog.Logger) http.Handler {
	a := &admin{store: store, recv: recv, log: log}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", a.healthz)
	mux.HandleFunc("GET /readyz", a.healthz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	mux.HandleFunc("GET /v1/stores/{store_id}/watermark", a.watermark)
	mux.HandleFunc("GET /v1/completeness", a.completeness)
	mux.HandleFunc("GET /v1/stores", a.stores)
	mux.HandleFunc("GET /v1/stores/{store_id}", a.storeEntry)
	mux.HandleFunc("GET /v1/stores/{store_id}/quarantine", a.quarantine)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such path")
	})
	return httpguard.CleanPaths(mux)
}

type admin struct {
	store hqdb.Store
	recv  Readiness
	log   *slog.Logger
}

func (a *admin) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{"nats": "ok", "database": "ok"}
	ok := true
	if err := a.recv.Ready(); err != nil {
		checks["nats"], ok = err.Error(), false
	}
	if err := a.store.Ping(ctx); err != nil {
		checks["database"], ok = err.Error(), false
	}
	status := http.StatusOK
	if !ok {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, map[string]any{"ok": ok, "checks": checks})
}

func (a *admin) watermark(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("store_id")
	if !validStoreID(id) {
		writeError(w, http.StatusBadRequest, "invalid_store_id", "store ID must be 1-32 of [A-Za-z0-9_-]")
		return
	}
	wm, err := a.store.Watermark(r.Context(), id)
	if err != nil {
		a.log.Error("watermark", "store_id", id, "err", err)
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", "the database did not answer")
		return
	}
	writeJSON(w, http.StatusOK, wm)
}

// quarantine lists the store's quarantined transactions (docs/hq-sync.md).
func (a *admin) quarantine(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("store_id")
	if !validStoreID(id) {
		writeError(w, http.StatusBadRequest, "invalid_store_id", "store ID must be 1-32 of [A-Za-z0-9_-]")
		return
	}
	qs, err := a.store.Quarantined(r.Context(), id)
	if err != nil {
		a.log.Error("quarantine", "store_id", id, "err", err)
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", "the database did not answer")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"store_id": id, "quarantined": qs})
}

func (a *admin) completeness(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	rep, err := a.store.Completeness(r.Context(), now)
	if err != nil {
		a.log.Error("completeness", "err", err)
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", "the database did not answer")
		return
	}
	markRepair(&rep, now)
	writeJSON(w, http.StatusOK, rep)
}

// stores is the fleet view (contract §7).
func (a *admin) stores(w http.ResponseWriter, r *http.Request) {
	es, err := a.store.Fleet(r.Context(), time.Now())
	if err != nil {
		a.log.Error("fleet", "err", err)
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", "the database did not answer")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"stores": es})
}

// storeEntry is one store of the fleet view, 404 for one never heard from.
func (a *admin) storeEntry(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("store_id")
	if !validStoreID(id) {
		writeError(w, http.StatusBadRequest, "invalid_store_id", "store ID must be 1-32 of [A-Za-z0-9_-]")
		return
	}
	es, err := a.store.Fleet(r.Context(), time.Now())
	if err != nil {
		a.log.Error("fleet", "store_id", id, "err", err)
		writeError(w, http.StatusServiceUnavailable, "database_unavailable", "the database did not answer")
		return
	}
	for _, e := range es {
		if e.StoreID == id {
			writeJSON(w, http.StatusOK, e)
			return
		}
	}
	writeError(w, http.StatusNotFound, "not_found", "no message from this store yet")
}

func writeJSON(w http.ResponseWriter, status int, v any) { jsonhttp.Write(w, status, v) }
func writeError(w http.ResponseWriter, status int, code, msg string) {
	jsonhttp.Error(w, status, code, msg)
}
