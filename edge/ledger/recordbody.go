package ledger

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// The idempotency record keeps the result replayed to retries, because
// until the journal holds a sale it is the only copy of it (existing,
// RecoverOrphans, Unjournaled rebuild the journal row from it). It cannot
// be a hash; it is stored DEFLATE-compressed instead (issue 22 finding 6).
// The mismatch check never read it: it compares the request fingerprint.

// packMin is the size from which a resultPacker compresses. A fresh
// compressor per result (660 µs and 1.2 MB of allocation,
// BenchmarkPackRest) slowed the degraded hand-over's catch-up past its
// bound (TestHandOverKeepsSelling); the packer reuses its compressors
// (17 µs, 15 KB), and a one-line sale's ~250 bytes stay plain: DEFLATE
// does not shrink them enough to repay it.
const packMin = 1024

// The first byte of the packed rest says how the rest follows.
const (
	packPlain   = '0'
	packDeflate = 'z'
)

// resultPacker encodes the result after its flow number for txn.lua:
// plain below packMin, raw DEFLATE above. Its compressors are reused
// (Reset), since making one allocates over a megabyte of tables.
type resultPacker struct{ writers sync.Pool }

func newResultPacker() *resultPacker {
	return &resultPacker{writers: sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed) // level is valid: no error
		return w
	}}}
}

// pack is the packed form of rest.
func (p *resultPacker) pack(rest string) string {
	if len(rest) < packMin {
		return string(packPlain) + rest
	}
	var buf bytes.Buffer
	buf.Grow(len(rest)/4 + 64)
	buf.WriteByte(packDeflate)
	w := p.writers.Get().(*flate.Writer)
	w.Reset(&buf)
	_, _ = io.WriteString(w, rest) // a bytes.Buffer never fails
	_ = w.Close()
	w.Reset(nil) // drop the buffer before the writer goes back
	p.writers.Put(w)
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
