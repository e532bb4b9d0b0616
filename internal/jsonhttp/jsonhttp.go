package jsonhttp

import (
	"encoding/json"
	"net/http"
)

// ErrorBody is the contract's error answer:
// {"error": {"code": "snake_case_code", "message": "…"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of an ErrorBody.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// encodeFailed is sent when an answer cannot be encoded: a defect, but
// the caller still gets the contract's shape rather than half a body.
const encodeFailed = `{"error":{"code":"internal","message":"encoding the answer failed"}}`

// Write answers v as JSON with status. The body is encoded before the
// status is written, so an encoding failure is still a clean 500.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteRaw(w, http.StatusInternalServerError, []byte(encodeFailed))
		return
	}
	WriteRaw(w, status, b)
}

// WriteRaw answers JSON that is already encoded (a stored sale, replayed
// byte for byte).
func WriteRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Error answers the contract's error body.
func Error(w http.ResponseWriter, status int, code, msg string) {
	Write(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg}})
}
