package strictjson_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/posedge/posedge/internal/strictjson"
)

type line struct {
	Barcode string `json:"barcode"`
	Qty     int64  `json:"qty"`
}

type inner struct {
	Note string `json:"note"`
}

type sale struct {
	Lines []line          `json:"lines"`
	Total json.RawMessage `json:"total_cents"`
	inner
}

func TestCheck(t *testing.T) {
	f := strictjson.FieldsOf(&sale{})
	tests := []struct {
		name, body string
		want       error // nil = accepted; errMalformed = any other error
	}{
		{"plain", `{"lines":[{"barcode":"A","qty":1}],"total_cents":1,"note":"x"}`, nil},
		{"unknown keys are the decoder's business", `{"other":1}`, nil},
		{"duplicate at the top", `{"total_cents":1,"total_cents":2}`, strictjson.ErrDuplicateKey},
		{"duplicate in a line", `{"lines":[{"qty":1,"qty":40}]}`, strictjson.ErrDuplicateKey},
		{"duplicate but for case", `{"note":"a","NOTE":"b"}`, strictjson.ErrDuplicateKey},
		{"duplicate in an unknown object", `{"x":{"a":{"b":1,"b":2}}}`, strictjson.ErrDuplicateKey},
		{"field in upper case", `{"TOTAL_CENTS":1}`, strictjson.ErrKeyCase},
		{"embedded field in another case", `{"Note":"x"}`, strictjson.ErrKeyCase},
		{"line field in another case", `{"lines":[{"Qty":1}]}`, strictjson.ErrKeyCase},
		{"long s is an s but for case", "{\"total_cent\u017f\":1}", strictjson.ErrKeyCase},
		{"long s and s in one object", "{\"a\u017f\":1,\"as\":2}", strictjson.ErrDuplicateKey},
		{"trailing data", `{} {}`, errMalformed},
		{"malformed", `{"a":}`, errMalformed},
	}
	for _, tt := range tests {
		err := strictjson.Check([]byte(tt.body), f)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want == errMalformed && (err == nil || errors.Is(err, strictjson.ErrDuplicateKey) || errors.Is(err, strictjson.ErrKeyCase)):
			t.Errorf("%s: %v, want a malformed-JSON error", tt.name, err)
		case tt.want != nil && tt.want != errMalformed && !errors.Is(err, tt.want):
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

var errMalformed = errors.New("malformed")

func TestFieldsOf(t *testing.T) {
	f := strictjson.FieldsOf(&sale{})
	if len(f.Names) != 3 || f.Names[0] != "lines" || f.Names[2] != "note" || f.Below["lines"] == nil ||
		len(f.Below["lines"].Names) != 2 || !f.Below["total_cents"].Opaque || f.Below["note"] != nil {
		t.Fatalf("%+v", f)
	}
	batch := strictjson.FieldsOf(&struct {
		Sales []json.RawMessage `json:"sales"`
	}{})
	if !batch.Below["sales"].Opaque {
		t.Fatalf("raw sales not opaque: %+v", batch.Below["sales"])
	}
	if err := strictjson.Check([]byte(`{"sales":[{"a":1,"a":2}]}`), batch); err != nil {
		t.Fatalf("checked inside a raw value: %v", err)
	}
	if err := strictjson.Check([]byte(`{"sales":[],"sales":[]}`), batch); !errors.Is(err, strictjson.ErrDuplicateKey) {
		t.Fatalf("duplicate beside a raw value: %v", err)
	}
	if strictjson.FieldsOf(3) != nil {
		t.Fatal("an int has fields")
	}
}

func TestDeepNestingRefused(t *testing.T) {
	b := make([]byte, 0, 200)
	for i := 0; i < strictjson.MaxDepth+2; i++ {
		b = append(b, '[')
	}
	for i := 0; i < strictjson.MaxDepth+2; i++ {
		b = append(b, ']')
	}
	if err := strictjson.Check(b, nil); err == nil {
		t.Fatal("accepted")
	}
}
