package api

import (
	"net/http"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/offline/journal"
)

// The admin routes of the transactions Redis refused to apply (`posedge
// journal quarantine list|retry`):
//
//	GET  /admin/v1/journal/quarantine        → {"transactions": [{flow_no, reason, at}]}
//	POST /admin/v1/journal/quarantine/retry  body {"flow_nos": [...]} (optional; none = all)
//	                                          → {"retried": n}
func (a *adminAPI) unappliable(w http.ResponseWriter, r *http.Request) {
	rows, err := a.Ledger.Unappliable(r.Context())
	if err != nil {
		fail(w, a.Log, err)
		return
	}
	if rows == nil {
		rows = []journal.UnappliableRow{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"transactions": rows})
}

func (a *adminAPI) retryUnappliable(w http.ResponseWriter, r *http.Request) {
	b, e := readBody(r, maxBodyBytes)
	if e != nil {
		fail(w, a.Log, e)
		return
	}
	var in struct {
		FlowNos []string `json:"flow_nos"`
	}
	if len(b) > 0 {
		if e := decodeStrict(b, &in); e != nil {
			fail(w, a.Log, e)
			return
		}
	}
	for _, f := range in.FlowNos {
		if !ledger.ValidFlowNo(f) {
			writeError(w, http.StatusBadRequest, "invalid_flow_no", "flow_nos must hold the digits of flow numbers")
			return
		}
	}
	n, err := a.Ledger.RetryUnappliable(r.Context(), in.FlowNos...)
	if err != nil {
		fail(w, a.Log, err)
		return
	}
	a.Log.Info("unappliable transactions retried", "count", n, "flow_nos", in.FlowNos, "by", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]int{"retried": n})
}
