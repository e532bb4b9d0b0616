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

// maxResultBytes bounds what recordBody inflates, so a damaged or hostile
// record (a zip bomb) costs at most this much memory. The longest real
// result, MaxLines lines of 64-byte barcodes and 2^63 prices, is ~26 KB;
// 1 MiB is also the largest body HQ stores (JetStream's max payload), so
// a result past it could not be replayed anyway.
const maxResultBytes = 1 << 20

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
	src := bytes.NewReader([]byte(rz[1:]))
	rest, err := io.ReadAll(io.LimitReader(flate.NewReader(src), maxResultBytes+1))
	if err != nil {
		return nil, fmt.Errorf("inflate the result of record %s: %w", flow, err)
	}
	if len(rest) > maxResultBytes {
		return nil, fmt.Errorf("inflate the result of record %s: more than %d bytes; no sale's result is this long, the record is damaged", flow, maxResultBytes)
	}
	// flate stops at the final block; bytes after it were never written by
	// pack (bytes.Reader is an io.ByteReader, so flate reads no further
	// than it needs).
	if src.Len() > 0 {
		return nil, fmt.Errorf("inflate the result of record %s: %d bytes after the compressed result; the record is damaged", flow, src.Len())
	}
	return append([]byte(prefix), rest...), nil
}
