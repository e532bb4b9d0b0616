package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/internal/jsonhttp"
)

// Every kind of ledger refusal is answered with the status the contract
// gives its codes, the code and message as they are, and Retry-After when
// the ledger says when to retry; anything else is a 500 without internals.
func TestFailAnswersLedgerRefusals(t *testing.T) {
	inProgress := ledger.Errorf(ledger.KindConflict, "request_in_progress", "wait")
	inProgress.RetryAfter = time.Second
	slow := ledger.Errorf(ledger.KindUnavailable, "redis_unavailable", "down")
	slow.RetryAfter = 1500 * time.Millisecond
	tests := []struct {
		err        error
		status     int
		code       string
		retryAfter string
	}{
		{ledger.Errorf(ledger.KindInvalid, "total_mismatch", "m"), 400, "total_mismatch", ""},
		{ledger.Errorf(ledger.KindNotFound, "sale_not_found", "m"), 404, "sale_not_found", ""},
		{ledger.Errorf(ledger.KindConflict, "insufficient_stock", "m"), 409, "insufficient_stock", ""},
		{inProgress, 409, "request_in_progress", "1"},
		{ledger.Errorf(ledger.KindUnprocessable, "idempotency_key_reused", "m"), 422, "idempotency_key_reused", ""},
		{ledger.Errorf(ledger.KindTooLarge, "body_too_large", "m"), 413, "body_too_large", ""},
		{ledger.Errorf(ledger.KindUnavailable, "journal_unavailable", "m"), 503, "journal_unavailable", ""},
		{slow, 503, "redis_unavailable", "2"},
		{fmt.Errorf("wrapped: %w", ledger.Errorf(ledger.KindNotFound, "item_not_found", "m")), 404, "item_not_found", ""},
		{ledger.Errorf(ledger.KindInternal, "internal", "m"), 500, "internal", ""},
		{ledger.Errorf("no such kind", "odd", "m"), 500, "odd", ""},
		{errors.New("disk on fire"), 500, "internal", ""},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range tests {
		w := httptest.NewRecorder()
		fail(w, log, tt.err)
		var body jsonhttp.ErrorBody
		_ = json.Unmarshal(w.Body.Bytes(), &body)
		if w.Code != tt.status || body.Error.Code != tt.code || w.Header().Get("Retry-After") != tt.retryAfter {
			t.Errorf("%v: answered %d %s Retry-After %q, want %d %s %q", tt.err, w.Code, body.Error.Code,
				w.Header().Get("Retry-After"), tt.status, tt.code, tt.retryAfter)
		}
		var le *ledger.Error
		if errors.As(tt.err, &le) && body.Error.Message != le.Message {
			t.Errorf("%v: message %q", tt.err, body.Error.Message)
		}
	}
}
