package ledger

import (
	"fmt"
	"time"
)

// Kind says what sort of refusal an Error is, so a caller can answer it
// in its own protocol (edge/api maps each kind to one HTTP status).
type Kind string

// The kinds of refusal. The set is closed: a new kind needs a mapping in
// every caller that answers refusals.
const (
	KindInvalid       Kind = "invalid"       // the request itself is malformed or breaks a rule
	KindNotFound      Kind = "not_found"     // what it refers to does not exist
	KindConflict      Kind = "conflict"      // the store's state refuses it now (stock, refund left, in flight)
	KindUnprocessable Kind = "unprocessable" // well-formed but not acceptable (key reused, unknown item)
	KindTooLarge      Kind = "too_large"     // the request exceeds a size limit
	KindUnavailable   Kind = "unavailable"   // Redis or the journal cannot serve it now; retry
	KindInternal      Kind = "internal"      // a bug or an unexpected failure
)

// Error is a refusal the terminal reads: a kind, the contract's error code
// and a message for people. Nothing was changed when a ledger call
// returns one.
type Error struct {
	Kind       Kind
	Code       string
	Message    string
	RetryAfter time.Duration // when to retry; 0 = no hint
}

func (e *Error) Error() string { return fmt.Sprintf("%s %s: %s", e.Kind, e.Code, e.Message) }

// Errorf makes a refusal.
func Errorf(kind Kind, code, format string, a ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, a...)}
}

// Refusals shared by several paths.
func errInProgress() *Error {
	e := Errorf(KindConflict, "request_in_progress", "a request with this Idempotency-Key is still being processed; retry in a second")
	e.RetryAfter = time.Second
	return e
}

func errKeyReused() *Error {
	return Errorf(KindUnprocessable, "idempotency_key_reused", "this Idempotency-Key was used for a different request body")
}

func errJournal(err error) *Error {
	return Errorf(KindUnavailable, "journal_unavailable", "the sale could not be recorded durably (%v); nothing was charged to the journal, retry with the same key", err)
}

func errRedisUnavailable(what string) *Error {
	return Errorf(KindUnavailable, "redis_unavailable", "%s needs the store's Redis, which is unreachable", what)
}
