package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/posedge/posedge/edge/ledger"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":{"code":"internal","message":"encoding the answer failed"}}`, http.StatusInternalServerError)
		return
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e errorBody
	e.Error.Code, e.Error.Message = code, msg
	writeJSON(w, status, e)
}

// fail answers an error from the ledger or elsewhere; anything that is not
// a *ledger.Error is logged and answered 500 without internals.
func fail(w http.ResponseWriter, log *slog.Logger, err error) {
	var le *ledger.Error
	if errors.As(err, &le) {
		if le.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(le.RetryAfter))
		}
		writeError(w, le.Status, le.Code, le.Message)
		return
	}
	log.Error("request failed", "err", err)
	writeError(w, http.StatusInternalServerError, "internal", "internal error; the request may be retried with the same Idempotency-Key")
}
