package ledger

import (
	"fmt"
	"net/http"
)

// Error is a refusal the terminal reads: an HTTP status and the contract's
// error code. Nothing was changed when a ledger call returns one.
type Error struct {
	Status     int
	Code       string
	Message    string
	RetryAfter int // seconds; 0 = no header
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

func errf(status int, code, format string, a ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}

// Refusals shared by several paths.
func errInProgress() *Error {
	e := errf(http.StatusConflict, "request_in_progress", "a request with this Idempotency-Key is still being processed; retry in a second")
	e.RetryAfter = 1
	return e
}

func errKeyReused() *Error {
	return errf(http.StatusUnprocessableEntity, "idempotency_key_reused", "this Idempotency-Key was used for a different request body")
}

func errJournal(err error) *Error {
	return errf(http.StatusServiceUnavailable, "journal_unavailable", "the sale could not be recorded durably (%v); nothing was charged to the journal, retry with the same key", err)
}

func errRedisUnavailable(what string) *Error {
	return errf(http.StatusServiceUnavailable, "redis_unavailable", "%s needs the store's Redis, which is unreachable", what)
}
