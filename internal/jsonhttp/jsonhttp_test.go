package jsonhttp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAnswers(t *testing.T) {
	cases := []struct {
		name       string
		write      func(http.ResponseWriter)
		wantStatus int
		wantBody   string
	}{
		{"value", func(w http.ResponseWriter) { Write(w, http.StatusCreated, map[string]int{"n": 1}) }, 201, `{"n":1}`},
		{"raw bytes kept as they are", func(w http.ResponseWriter) { WriteRaw(w, 200, []byte(`{"b": 2}`)) }, 200, `{"b": 2}`},
		{"contract error", func(w http.ResponseWriter) { Error(w, 404, "not_found", "no such endpoint") }, 404,
			`{"error":{"code":"not_found","message":"no such endpoint"}}`},
		{"unencodable value is a clean 500", func(w http.ResponseWriter) { Write(w, 200, map[string]any{"f": func() {}}) }, 500, encodeFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c.write(rec)
			if rec.Code != c.wantStatus || rec.Body.String() != c.wantBody || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("%d %q %q, want %d %q", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"), c.wantStatus, c.wantBody)
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("not JSON: %s", rec.Body.String())
			}
		})
	}
}
