package apispec

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The cost of checking one sale and its answer (what every e2e exchange
// pays); a figure to read, not an assertion.
func BenchmarkCheckSale(b *testing.B) {
	s, err := LoadFromModule(File)
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"lines":[{"barcode":"A1","qty":2,"price_cents":450}],"total_cents":900,"tender":"card"}`)
	answer := []byte(`{"flow_no":"1000000000000042","store_id":"S1","terminal_id":"T01","kind":"sale","total_cents":900,"tender":"card",` +
		`"lines":[{"barcode":"A1","qty":2,"price_cents":450}],"created_at":"2026-12-01T10:00:00.123456789Z","occurred_at":"2026-12-01T10:00:00.123456789Z"}`)
	req, _ := http.NewRequest("POST", "http://127.0.0.1:8080/v1/sales", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("Idempotency-Key", "k-1")
	req.Header.Set("Content-Type", "application/json")
	res := &http.Response{StatusCode: 201, Header: http.Header{"Content-Type": {"application/json"},
		"Ratelimit": {`"pay";r=19;t=1`}, "Ratelimit-Policy": {`"pay";q=20;w=1`}}, Body: io.NopCloser(bytes.NewReader(answer))}
	b.ResetTimer()
	for range b.N {
		if p := s.CheckRequest(Terminal, req, body); len(p) > 0 {
			b.Fatal(p)
		}
		if _, p := s.CheckResponse(Terminal, req, res, answer); len(p) > 0 {
			b.Fatal(p)
		}
	}
}
