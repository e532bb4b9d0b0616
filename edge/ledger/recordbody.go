package ledger

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
)

// The idempotency record keeps the result replayed to retries, because
// until the journal holds a sale it is the only copy of it (existing,
// RecoverOrphans, Unjournaled rebuild the journal row from it). It cannot
// be a hash; it is stored DEFLATE-compressed instead (issue 22 finding 6).
// The mismatch check never read it: it compares the request fingerprint.

// packRest compresses the result after its flow number for txn.lua.
func packRest(rest string) string {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed) // level is valid: no error
	_, _ = io.WriteString(w, rest)                 // a bytes.Buffer never fails
	_ = w.Close()
	return buf.String()
}

// recordBody returns the result a record holds: body in the old layout
// (whole JSON, written before the upgrade and honoured for its TTL), or
// the flow number and compressed rest in the new one.
func recordBody(flow, body, rz string) ([]byte, error) {
	if body != "" || rz == "" {
		return []byte(body), nil
	}
	rest, err := io.ReadAll(flate.NewReader(bytes.NewReader([]byte(rz))))
	if err != nil {
		return nil, fmt.Errorf("inflate the result of record %s: %w", flow, err)
	}
	return append([]byte(`{"flow_no":"`+flow+`",`), rest...), nil
}
