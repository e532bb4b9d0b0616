package tillclient_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/posedge/posedge/internal/apispec"
)

// BatchErrorCode is written out flat (generators read one enum, not an
// anyOf of two) rather than as SaleValidationCode plus the batch's own
// codes: it must still hold every code a sale alone can be refused with.
func TestBatchErrorCodeHoldsEverySaleValidationCode(t *testing.T) {
	b, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Enum []string `yaml:"enum"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	sale := doc.Components.Schemas["SaleValidationCode"].Enum
	batch := doc.Components.Schemas["BatchErrorCode"].Enum
	if len(sale) == 0 || len(batch) == 0 {
		t.Fatalf("SaleValidationCode %v, BatchErrorCode %v: both must be enums", sale, batch)
	}
	for _, c := range sale {
		if !slices.Contains(batch, c) {
			t.Errorf("BatchErrorCode lacks %q, a SaleValidationCode a batch item can be refused with", c)
		}
	}
}

// BatchResult's variants share one status type (ogen tells them apart by
// sale and error only then); its if/then/else still pairs 201 with a sale
// and the refusals with an error, as the variants' own status enums did.
func TestBatchResultPairsStatusWithSaleOrError(t *testing.T) {
	spec, err := apispec.LoadFromModule(apispec.File)
	if err != nil {
		t.Fatal(err)
	}
	sale := `{"flow_no":"1000000000000043","store_id":"S1","terminal_id":"T01","kind":"sale","total_cents":436,"tender":"cash",` +
		`"lines":[{"barcode":"2000000000001","qty":1,"price_cents":436}],"created_at":"2026-12-01T10:01:00.5Z","occurred_at":"2026-12-01T09:12:00Z"}`
	refused := `{"code":"total_mismatch","message":"m"}`
	for _, tc := range []struct {
		result string
		ok     bool
	}{
		{`{"status":201,"sale":` + sale + `}`, true},
		{`{"status":400,"error":` + refused + `}`, true},
		{`{"status":400,"sale":` + sale + `}`, false},
		{`{"status":201,"error":` + refused + `}`, false},
		{`{"status":200,"sale":` + sale + `}`, false},
	} {
		body := []byte(`{"results":[` + tc.result + `]}`)
		req := httptest.NewRequest("POST", "/v1/sales/batch", nil)
		res := &http.Response{StatusCode: 200, Header: http.Header{
			"Content-Type":     {"application/json"},
			"Ratelimit":        {`"sync";r=1;t=1`},
			"Ratelimit-Policy": {`"sync";q=2;w=1`},
		}, Request: req}
		_, problems := spec.CheckResponse(apispec.Terminal, req, res, body)
		if got := len(problems) == 0; got != tc.ok {
			t.Errorf("%s: accepted %v, want %v (%v)", tc.result, got, tc.ok, problems)
		}
	}
}
