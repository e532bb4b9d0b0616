package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/ratelimit"
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

// statusOf is the HTTP status answering each kind of ledger refusal: the
// one place the money core's refusals meet HTTP.
func statusOf(k ledger.Kind) int {
	switch k {
	case ledger.KindInvalid:
		return http.StatusBadRequest
	case ledger.KindNotFound:
		return http.StatusNotFound
	case ledger.KindConflict:
		return http.StatusConflict
	case ledger.KindUnprocessable:
		return http.StatusUnprocessableEntity
	case ledger.KindTooLarge:
		return http.StatusRequestEntityTooLarge
	case ledger.KindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail answers an error from the ledger or elsewhere; anything that is not
// a *ledger.Error is logged and answered 500 without internals.
func fail(w http.ResponseWriter, log *slog.Logger, err error) {
	var le *ledger.Error
	if errors.As(err, &le) {
		if le.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(le.RetryAfter)))
		}
		writeError(w, statusOf(le.Kind), le.Code, le.Message)
		return
	}
	log.Error("request failed", "err", err)
	writeError(w, http.StatusInternalServerError, "internal", "internal error; the request may be retried with the same Idempotency-Key")
}
