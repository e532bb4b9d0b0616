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

// packMin is the size from which packRest compresses: a compressor costs
// ~2 ms and 1.2 MB of allocation per call (BenchmarkPackRest), which a
// one-line sale's ~250 bytes do not repay and which slowed the degraded
// hand-over's catch-up past its bound (TestHandOverKeepsSelling).
const packMin = 1024

// The first byte of the packed rest says how the rest follows.
const (
	packPlain   = '0'
	packDeflate = 'z'
)

// packRest encodes the result after its flow number for txn.lua: plain
// below packMin, raw DEFLATE above.
func packRest(rest string) string {
	if len(rest) < packMin {
		return string(packPlain) + rest
	}
	var buf bytes.Buffer
	buf.WriteByte(packDeflate)
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
	prefix := `{"flow_no":"` + flow + `",`
	switch rz[0] {
	case packPlain:
		return []byte(prefix + rz[1:]), nil
	case packDeflate:
	default:
		return nil, fmt.Errorf("record %s: result stored in an unknown form %q", flow, rz[0])
	}
	rest, err := io.ReadAll(flate.NewReader(bytes.NewReader([]byte(rz[1:]))))
	if err != nil {
		return nil, fmt.Errorf("inflate the result of record %s: %w", flow, err)
	}
	return append([]byte(prefix), rest...), nil
}
