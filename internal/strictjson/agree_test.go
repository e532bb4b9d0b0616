package strictjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type agreeLine struct {
	Barcode    string `json:"barcode"`
	Qty        int64  `json:"qty"`
	PriceCents int64  `json:"price_cents"`
}

type agreeBody struct {
	FlowNo string          `json:"flow_no"`
	Total  int64           `json:"total_cents"`
	Lines  []agreeLine     `json:"lines"`
	Extra  json.RawMessage `json:"extra"`
	Kelvin string          `json:"\u212aelvin"` // a non-ASCII name that folds to ASCII
}

// agreeFields exercises every part of Fields: names, numbers, below,
// opaque, and a name outside ASCII.
func agreeFields() *Fields {
	f := FieldsOf(&agreeBody{})
	f.Numbers = []string{"total_cents"}
	f.Below["lines"].Numbers = []string{"qty", "price_cents"}
	return f
}

// class names what a verdict is, for comparing two checkers: accepted,
// one of the three refusals, or malformed.
func class(err error) string {
	switch {
	case err == nil:
		return "accepted"
	case errors.Is(err, ErrDuplicateKey):
		return "duplicate"
	case errors.Is(err, ErrKeyCase):
		return "case"
	case errors.Is(err, ErrNotNumber):
		return "not a number"
	}
	return "malformed"
}

var agreeSeeds = []string{
	`{"flow_no":"1","total_cents":5,"lines":[{"barcode":"A","qty":1,"price_cents":5}]}`,
	`{"flow_no":"1","total_cents":5,"total_cents":6}`,
	`{"FLOW_NO":"1","total_cents":5}`,
	`{"flow_no":"1"}`,
	`{"total_cents":"5"}`,
	`{"total_cents":{}}`,
	`{"total_cents":[1]}`,
	`{"total_cents":5,"lines":[{"qty":1,"Qty":2}]}`,
	`{"total_cents":5,"lines":[{"qty":1}]}`,
	`{"total_cents":5,"extra":{"a":1,"a":2}}`,
	`{"total_cents":5,"extra":{"a":1,"a":2}`,
	`{"total_cents":5,"kelvin":"x"}`,
	"{\"total_cents\":5,\"\u212aelvin\":\"x\"}",
	`{"total_cents":5,"\u0066low_no":"1"}`,
	`{"total_cents":5,"\ud800":1,"\udfff":2}`,
	"{\"total_cents\":5,\"\xff\":1,\"\xfe\":2}",
	`{"total_cents":-0.5e+3}`,
	`{"total_cents":01}`,
	`{"total_cents":1.}`,
	`{"total_cents":5,}`,
	`{"total_cents":5} {}`,
	`{"total_cents":5}   `,
	`[{"total_cents":5},{"flow_no":"x"}]`,
	`[1,]`, `[]`, `{}`, `1`, `"s"`, `tru`, `nul`, `null`, ``, ` `,
	`{"a" 1}`, `{"a":1,"a" x`, `{"total_cents" :  7 , "x":[true,false,null]}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"A":18,"total_cents":1}`,
	`{"a":"\q"}`, `{"a":"\u12"}`, "{\"a\":\"\x01\"}",
}

// Check (the scanner) and checkTokens (the json.Decoder walk it
// replaced) give every input the same verdict.
func FuzzCheckAgreesWithTokens(f *testing.F) {
	for _, s := range agreeSeeds {
		f.Add([]byte(s))
	}
	fields := agreeFields()
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, fs := range []*Fields{nil, fields} {
			got, want := Check(body, fs), checkTokens(body, fs)
			if class(got) != class(want) {
				t.Fatalf("%q (fields %v): scanner %s (%v), tokens %s (%v)", body, fs != nil, class(got), got, class(want), want)
			}
			if got == nil {
				// What is accepted decodes.
				var v agreeBody
				if fs != nil && body[0] == '{' {
					if err := json.Unmarshal(body, &v); err != nil && !isTypeError(err) {
						t.Fatalf("%q accepted but encoding/json refuses its syntax: %v", body, err)
					}
				}
			}
		}
	})
}

func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

// nested returns n arrays one inside the other around inner.
func nested(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

func TestCheckAgreesWithTokensOnSeeds(t *testing.T) {
	fields := agreeFields()
	seeds := append([]string{
		nested(MaxDepth, "1"), nested(MaxDepth+1, "1"), nested(MaxDepth-1, `{"a":1}`), nested(MaxDepth, `{"a":1}`),
		`{"total_cents":1,"extra":` + nested(200, "") + `}`,
		`{"total_cents":1,"extra":` + nested(rawMaxDepth+1, "") + `}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"P":17}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17,"Q":18}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"A":16}`,
	}, agreeSeeds...)
	for _, s := range seeds {
		for _, fs := range []*Fields{nil, fields} {
			got, want := Check([]byte(s), fs), checkTokens([]byte(s), fs)
			if class(got) != class(want) {
				t.Errorf("%q (fields %v): scanner %s (%v), tokens %s (%v)", s, fs != nil, class(got), got, class(want), want)
			}
		}
	}
}

// A body as posedge-hq receives it, for the two checkers' cost.
var benchBody = []byte(`{"flow_no":"1000000000000045","store_id":"S042","terminal_id":"T01","kind":"sale","total_cents":4500,` +
	`"tender":"cash","created_at":"2026-12-01T10:00:00.123456789Z","occurred_at":"2026-12-01T10:00:00Z",` +
	`"lines":[{"barcode":"6901234567890","qty":2,"price_cents":1500},{"barcode":"6901234567891","qty":1,"price_cents":1500}]}`)

func BenchmarkCheck(b *testing.B) {
	f := agreeFields()
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Check(benchBody, f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := checkTokens(benchBody, f); err != nil {
				b.Fatal(err)
			}
		}
	})
}
