package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/posedge/posedge/edge/reconcile"
)

// Reconciler runs the daily reconciliation on demand and keeps its last
// report (edge/reconcile.Reconciler).
type Reconciler interface {
	Run(ctx context.Context, days []string) (*reconcile.Report, error)
	Last() *reconcile.Report
}

// ManifestPublisher publishes a business day's per-terminal manifests to
// HQ now (sync/replay.Replayer).
type ManifestPublisher interface {
	PublishManifest(ctx context.Context, day string) error
}

// reconcileTimeout bounds a reconciliation asked for over the admin API.
const reconcileTimeout = 2 * time.Minute

// lastReconcile is GET /admin/v1/reconcile: the last report.
func (a *adminAPI) lastReconcile(w http.ResponseWriter, r *http.Request) {
	if rep := a.Reconciler.Last(); rep != nil {
		writeJSON(w, http.StatusOK, rep)
		return
	}
	writeError(w, http.StatusNotFound, "not_found", "no reconciliation has completed since the daemon started")
}

// reconcileNow is POST /admin/v1/reconcile?date=YYYYMMDD (default today):
// reconcile that business day's counters and the stock now, and answer
// the report (what `posedge journal rebuild-counters` prints).
func (a *adminAPI) reconcileNow(w http.ResponseWriter, r *http.Request) {
	day, ok := a.date(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), reconcileTimeout)
	defer cancel()
	rep, err := a.Reconciler.Run(ctx, []string{day})
	switch {
	case errors.Is(err, reconcile.ErrRunning):
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusConflict, "reconcile_running", err.Error())
	case errors.Is(err, reconcile.ErrRedisDown):
		writeError(w, http.StatusServiceUnavailable, "redis_unavailable", err.Error())
	case err != nil:
		a.Log.Error("reconciliation asked by the admin API failed", "day", day, "err", err)
		writeError(w, http.StatusInternalServerError, "internal", "reconciliation failed: "+err.Error())
	default:
		writeJSON(w, http.StatusOK, rep)
	}
}

// publishManifest is POST /admin/v1/sync/manifest?date=YYYYMMDD (default
// today): publish that day's per-terminal manifests to HQ now.
func (a *adminAPI) publishManifest(w http.ResponseWriter, r *http.Request) {
	day, ok := a.date(w, r)
	if !ok {
		return
	}
	if err := a.Manifests.PublishManifest(r.Context(), day); err != nil {
		writeError(w, http.StatusServiceUnavailable, "hq_unavailable", "publish the manifests of "+day+": "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"published": day})
}
