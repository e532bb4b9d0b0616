package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/ratelimit"
	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/internal/cents"
	"github.com/posedge/posedge/internal/httpguard"
)

// AdminDeps are what the admin API needs.
type AdminDeps struct {
	Token   string               // bearer token; empty = none required (loopback listener)
	Guard   *ratelimit.AuthGuard // failed authentications per address; nil = a new one
	Ledger  *ledger.Ledger
	Limiter *ratelimit.Limiter
	Metrics http.Handler
	Ready   func(ctx context.Context) error // nil error = ready
	Status  func(ctx context.Context) any   // the object `posedge status --json` prints
	SyncNow func()                          // wake the replay up
	// Reconciler serves /admin/v1/reconcile; nil = no such route.
	Reconciler Reconciler
	// Manifests serves /admin/v1/sync/manifest; nil = no such route.
	Manifests ManifestPublisher
	Log       *slog.Logger
	HTTP      *HTTPMetrics // may be nil
}

// NewAdmin returns the admin API handler.
func NewAdmin(d AdminDeps) http.Handler {
	a := &adminAPI{d}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", a.ready)
	if d.Metrics != nil {
		mux.Handle("GET /metrics", d.Metrics)
	}
	mux.HandleFunc("GET /admin/v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, d.Status(r.Context()))
	})
	mux.HandleFunc("PUT /admin/v1/items/{barcode}", a.putItem)
	mux.HandleFunc("POST /admin/v1/items/{barcode}/stock-adjustments", a.stockAdjustment)
	mux.HandleFunc("POST /admin/v1/promo", a.promo)
	mux.HandleFunc("GET /admin/v1/promo", a.getPromo)
	mux.HandleFunc("GET /admin/v1/stats/daily", a.daily)
	mux.HandleFunc("GET /admin/v1/stats/hourly", a.hourly)
	mux.HandleFunc("GET /admin/v1/journal/quarantine", a.unappliable)
	mux.HandleFunc("POST /admin/v1/journal/quarantine/retry", a.retryUnappliable)
	mux.HandleFunc("POST /admin/v1/sync/now", func(w http.ResponseWriter, r *http.Request) {
		if d.SyncNow != nil {
			d.SyncNow()
		}
		writeJSON(w, http.StatusAccepted, map[string]string{"status": "replay woken up"})
	})
	if d.Reconciler != nil {
		mux.HandleFunc("GET /admin/v1/reconcile", a.lastReconcile)
		mux.HandleFunc("POST /admin/v1/reconcile", a.reconcileNow)
	}
	if d.Manifests != nil {
		mux.HandleFunc("POST /admin/v1/sync/manifest", a.publishManifest)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
	return d.HTTP.wrap("admin", httpguard.CleanPaths(a.auth(mux)))
}

type adminAPI struct{ AdminDeps }

// auth requires the bearer token (constant-time) on every path but
// /healthz; failed attempts count per source address in Guard, 10 in
// 60 s as on the terminal port.
func (a *adminAPI) auth(next http.Handler) http.Handler {
	g := a.Guard
	if g == nil {
		g = ratelimit.NewAuthGuard(10, time.Minute, time.Now)
	}
	return httpguard.RequireBearer(a.Token, g, func(r *http.Request) bool { return r.URL.Path == "/healthz" }, next)
}

func (a *adminAPI) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.Ready(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, "not_ready", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (a *adminAPI) putItem(w http.ResponseWriter, r *http.Request) {
	bc := r.PathValue("barcode")
	if !ledger.ValidBarcode(bc) {
		writeError(w, http.StatusBadRequest, "invalid_barcode", "barcode must be 1-64 of [A-Za-z0-9._-]")
		return
	}
	b, e := readBody(r, maxBodyBytes)
	if e != nil {
		fail(w, a.Log, e)
		return
	}
	var in struct {
		Name       *string          `json:"name"`
		PriceCents *json.RawMessage `json:"price_cents"`
		Stock      *json.RawMessage `json:"stock"`
	}
	if e := decodeStrict(b, &in); e != nil {
		fail(w, a.Log, e)
		return
	}
	if in.Name == nil || len(*in.Name) == 0 || len(*in.Name) > 128 {
		writeError(w, http.StatusBadRequest, "invalid_name", "name is required, at most 128 bytes")
		return
	}
	if in.PriceCents == nil || in.Stock == nil {
		writeError(w, http.StatusBadRequest, "invalid_amount", "price_cents and stock are required")
		return
	}
	price, ok := intField(*in.PriceCents, 0, cents.MaxItemPrice)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_amount", "price_cents must be a whole, non-negative number of cents")
		return
	}
	stock, ok := intField(*in.Stock, 0, 1<<40)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_qty", "stock must be a whole, non-negative number")
		return
	}
	it := ledger.Item{Barcode: bc, Name: *in.Name, PriceCents: price, Stock: stock}
	if err := a.Ledger.PutItem(r.Context(), it); err != nil {
		fail(w, a.Log, err)
		return
	}
	a.Log.Info("item upserted", "barcode", bc, "price_cents", price, "stock", stock, "by", r.RemoteAddr)
	writeJSON(w, http.StatusOK, it)
}

func (a *adminAPI) promo(w http.ResponseWriter, r *http.Request) {
	b, e := readBody(r, maxBodyBytes)
	if e != nil {
		fail(w, a.Log, e)
		return
	}
	var in struct {
		Coefficient *float64 `json:"coefficient"`
		TTLSeconds  *int     `json:"ttl_seconds"`
		StartsAt    *string  `json:"starts_at"`
		Actions     []string `json:"actions"`
		SetBy       string   `json:"set_by"`
	}
	if e := decodeStrict(b, &in); e != nil {
		fail(w, a.Log, e)
		return
	}
	if in.Coefficient == nil {
		writeError(w, http.StatusBadRequest, "invalid_promo", "coefficient is required, a number in (0, 10]")
		return
	}
	p := ratelimit.Promo{Coefficient: *in.Coefficient, Actions: in.Actions, SetBy: in.SetBy}
	if in.TTLSeconds != nil {
		if *in.TTLSeconds <= 0 {
			writeError(w, http.StatusBadRequest, "invalid_promo", "ttl_seconds must be > 0")
			return
		}
		p.TTLSeconds = *in.TTLSeconds
	}
	if in.StartsAt != nil {
		t, err := time.Parse(time.RFC3339, *in.StartsAt)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_promo", "starts_at must be RFC3339")
			return
		}
		p.StartsAt = t
	}
	if p.SetBy == "" {
		p.SetBy = "admin@" + r.RemoteAddr
	}
	stored, err := a.Limiter.SetPromo(r.Context(), p)
	if errors.Is(err, ratelimit.ErrInvalidPromo) {
		writeError(w, http.StatusBadRequest, "invalid_promo", err.Error())
		return
	}
	if err != nil {
		if redisdb.IsUnavailable(err) {
			writeError(w, http.StatusServiceUnavailable, "redis_unavailable", "storing the promotion needs Redis")
			return
		}
		fail(w, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, stored)
}

func (a *adminAPI) getPromo(w http.ResponseWriter, r *http.Request) {
	p, err := a.Limiter.CurrentPromo(r.Context())
	if err != nil {
		fail(w, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"promo": p})
}

func (a *adminAPI) date(w http.ResponseWriter, r *http.Request) (string, bool) {
	d := r.URL.Query().Get("date")
	if d == "" {
		return a.Ledger.Today(), true
	}
	if !businessday.Valid(d) {
		writeError(w, http.StatusBadRequest, "invalid_date", "date must be YYYYMMDD")
		return "", false
	}
	return d, true
}

func (a *adminAPI) daily(w http.ResponseWriter, r *http.Request) {
	d, ok := a.date(w, r)
	if !ok {
		return
	}
	s, err := a.Ledger.DailyStats(r.Context(), d)
	if err != nil {
		fail(w, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *adminAPI) hourly(w http.ResponseWriter, r *http.Request) {
	d, ok := a.date(w, r)
	if !ok {
		return
	}
	s, err := a.Ledger.HourlyStats(r.Context(), d)
	if err != nil {
		fail(w, a.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, s)
}
