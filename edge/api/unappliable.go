package api

import (
	"log/slog"
	"net/http"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/offline/journal"
)

// UnappliableRoutes are the admin routes of the transactions Redis
// refused to apply (`posedge journal quarantine list|retry`):
//
//	GET  /admin/v1/journal/quarantine        → {"transactions": [{flow_no, reason, at}]}
//	POST /admin/v1/journal/quarantine/retry  body {"flow_nos": [...]} (optional; none = all)
//	                                          → {"retried": n}
func UnappliableRoutes(l *ledger.Ledger, log *slog.Logger) map[string]http.Handler {
	return map[string]http.Handler{
		"GET /admin/v1/journal/quarantine": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rows, err := l.Unappliable(r.Context())
			if err != nil {
				fail(w, log, err)
				return
			}
			if rows == nil {
				rows = []journal.QuarantinedRow{}
			}
			writeJSON(w, http.StatusOK, map[string]any{"transactions": rows})
		}),
		"POST /admin/v1/journal/quarantine/retry": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, e := readBody(r, maxBodyBytes)
			if e != nil {
				fail(w, log, e)
				return
			}
			var in struct {
				FlowNos []string `json:"flow_nos"`
			}
			if len(b) > 0 {
				if e := decodeStrict(b, &in); e != nil {
					fail(w, log, e)
					return
				}
			}
			for _, f := range in.FlowNos {
				if !ledger.ValidFlowNo(f) {
					writeError(w, http.StatusBadRequest, "invalid_flow_no", "flow_nos must hold the digits of flow numbers")
					return
				}
			}
			n, err := l.RetryUnappliable(r.Context(), in.FlowNos...)
			if err != nil {
				fail(w, log, err)
				return
			}
			log.Info("unappliable transactions retried", "count", n, "flow_nos", in.FlowNos, "by", r.RemoteAddr)
			writeJSON(w, http.StatusOK, map[string]int{"retried": n})
		}),
	}
}
