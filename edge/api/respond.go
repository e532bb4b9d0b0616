package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/ratelimit"
	"github.com/posedge/posedge/internal/jsonhttp"
)

// The answers of this package, in the shape every posedge listener shares.
func writeJSON(w http.ResponseWriter, status int, v any)   { jsonhttp.Write(w, status, v) }
func writeRaw(w http.ResponseWriter, status int, b []byte) { jsonhttp.WriteRaw(w, status, b) }
func writeError(w http.ResponseWriter, status int, code, msg string) {
	jsonhttp.Error(w, status, code, msg)
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
