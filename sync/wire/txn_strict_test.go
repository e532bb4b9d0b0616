package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// strictSeeds are bodies of every form: posedge's own, and each thing the
// strict check refuses, in a shape the one pass could mistake.
var strictSeeds = append([]string{
	`{"flow_no":"1000000000000001","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":700,"tender":"cash","lines":[{"barcode":"A1","qty":1,"price_cents":700}],"created_at":"2026-05-20T10:00:00Z","occurred_at":"2026-05-20T10:00:00Z","receipt_no":"R-17","cashier_id":"C9"}`,
	`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"refund","total_cents":5,"TOTAL_CENTS":7,"created_at":"x"}`,
	`{"flow_no":"2","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":5,"total_cents":7,"created_at":"x"}`,
	`{"flow_no":"2","total_cents":5,"note":"a","NOTE":"b"}`,
	`{"flow_no":"2","total_cents":5,"lines":[{"qty":1,"qty":40,"price_cents":1}]}`,
	`{"flow_no":"2","total_cents":5,"lines":[{"qty":1,"price_cents":1,"Qty":40}]}`,
	`{"flow_no":"2","total_cents":5,"lines":[{"barcode":"A","qty":1}]}`,
	`{"flow_no":"2","created_at":"x"}`,
	`{"flow_no":"2","total_cents":012}`,
	`{"flow_no":"2","total_cents":-}`,
	`{"flow_no":"2","total_cents":5,"lines":[{"qty":01,"price_cents":1}]}`,
	`{"flow_no":"2","total_cents":5,"x":01}`,
	`{"flow_no":"2","total_cents":5,"x":1.}`,
	`{"flow_no":"2","total_cents":5,"x":-0.5e+7,"y":nul}`,
	`{"flow_no":"2","total_cents":5,"\u212aind":"sale"}`,
	"{\"flow_no\":\"2\",\"total_cents\":5,\"\u212aind\":\"sale\"}",
	`{"flow_no":"2","total_cents":5,"a":1,"b":2,"c":3,"d":4,"e":5}`,
	`{"flow_no":"2","total_cents":5} {}`,
	`{"flow_no":"2","total_cents":5,}`,
}, decodeSeeds...)

// decodeSeeds are bodies of every shape the decoders meet: posedge's
// own, and escapes, nulls, fractions, values of another type, numbers
// out of range, nesting under other keys.
var decodeSeeds = []string{
	`{"flow_no":"1000000000000001","store_id":"S001","terminal_id":"T01","kind":"sale","total_cents":700,"tender":"cash","lines":[{"barcode":"A1","qty":1,"price_cents":700}],"created_at":"2026-05-20T10:00:00Z","occurred_at":"2026-05-20T10:00:00Z"}`,
	`{"flow_no":"1","lines":[],"x":{"a":[1,"]}",{"b":null}],"c":"\"}"},"y":-1.5e3,"z":true,"total_cents":-0}`,
	`{"flow_no":"1","lines":null,"total_cents":1}`,
	`{"flow_no":null,"total_cents":2}`,
	`{"flow_no":"a\u00e9","store_id":"caf\u00c3\u00a9","total_cents":3}`,
	"{\"flow_no\":\"\xff\",\"total_cents\":4}",
	"{\"flow_no\":\"caf\u00e9\",\"total_cents\":4}",
	`{"total_cents":9223372036854775807}`,
	`{"total_cents":9223372036854775808}`,
	`{"total_cents":-9223372036854775809}`,
	`{"total_cents":1.0}`,
	`{"total_cents":1e2}`,
	`{"total_cents":5,"lines":[{"qty":1,"price_cents":2,"extra":[[]]},{"barcode":"B","qty":-1,"price_cents":0}]}`,
	`{"total_cents":5,"lines":[{"qty":1,"price_cents":2},null]}`,
	`{"total_cents":5,"lines":[{"qty":1.5,"price_cents":2}]}`,
	`{"total_cents":5,"kind":1}`,
	`{"total_cents":5,"kind":"sale","tender":["cash"]}`,
	`[{"flow_no":"1","total_cents":5}]`,
	`{ "flow_no" : "1" , "total_cents" : 6 , "lines" : [ { "qty" : 3 , "price_cents" : 2 } ] }   `,
	`{"original_flow_no":"7","tender":"card","unknown":"\\","total_cents":7}`,
}

// The one pass accepts only what the two passes accept, and decodes it to
// the same Txn: on every body, a strictTxn ok means checkJSONKeys accepts
// it and json.Unmarshal gives an equal Txn (so ParseTxn means the same
// thing whichever way it went, and the same as any JSON reader).
func FuzzStrictTxnAgrees(f *testing.F) {
	for _, s := range strictSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := strictTxn(body)
		if !ok {
			return
		}
		if err := checkJSONKeys(body, txnFields); err != nil {
			t.Fatalf("%q: one pass took %+v, the strict check refuses: %v", body, got, err)
		}
		var want Txn
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("%q: one pass took %+v, json.Unmarshal refuses: %v", body, got, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: one pass %#v, json.Unmarshal %#v", body, got, want)
		}
		if !json.Valid(body) {
			t.Fatalf("%q: one pass took invalid JSON", body)
		}
	})
}

// The one pass must be the way posedge's bodies go, or it saves nothing;
// and each refusal of the strict check must leave it (false), so that the
// two passes say why.
func TestStrictTxnForm(t *testing.T) {
	tests := []struct {
		name string
		body string
		one  bool // the one pass takes it
	}{
		{"posedge's sale", strictSeeds[0], true},
		{"posedge's refund", `{"flow_no":"1000000000000009","store_id":"S001","terminal_id":"T01","kind":"refund","total_cents":0,"tender":"cash","created_at":"2026-05-20T10:00:00Z","occurred_at":"2026-05-20T10:00:00Z","original_flow_no":"1000000000000001","lines":[]}`, true},
		{"white space", `{ "flow_no" : "1" , "total_cents" : 6 , "lines" : [ { "qty" : 3 , "price_cents" : 2 } ] }   `, true},
		{"other keys of every scalar kind", `{"total_cents":5,"a":"s","b":-0.5e+7,"c":true,"d":null}`, true},
		{"a field in another case", strictSeeds[1], false},
		{"a field twice", strictSeeds[2], false},
		{"another key twice but for case", strictSeeds[3], false},
		{"a line field twice", strictSeeds[4], false},
		{"a line field in another case", strictSeeds[5], false},
		{"a line without its price", strictSeeds[6], false},
		{"no total", strictSeeds[7], false},
		{"a leading zero", strictSeeds[8], false},
		{"a bare minus", strictSeeds[9], false},
		{"a line's leading zero", strictSeeds[10], false},
		{"another key's leading zero", strictSeeds[11], false},
		{"a number ending in a dot", strictSeeds[12], false},
		{"a broken literal", strictSeeds[13], false},
		{"an escaped key", strictSeeds[14], false},
		{"a key in another alphabet's case", strictSeeds[15], false},
		{"more other keys than the one pass holds", strictSeeds[16], false},
		{"data after the object", strictSeeds[17], false},
		{"a trailing comma", strictSeeds[18], false},
		{"an object under another key", `{"total_cents":5,"x":{"a":1}}`, false},
		{"an escaped string", `{"total_cents":5,"flow_no":"a\"b"}`, false},
		{"money as a string", `{"total_cents":"5"}`, false},
		{"money as a fraction", `{"total_cents":5.0}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := strictTxn([]byte(tt.body))
			if ok != tt.one {
				t.Fatalf("one pass took it: %v, want %v", ok, tt.one)
			}
			if !ok {
				return
			}
			want, err := decodeTxn([]byte(tt.body))
			if err != nil || checkJSONKeys([]byte(tt.body), txnFields) != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("one pass %#v; two passes %#v, %v", got, want, err)
			}
		})
	}
}

// Every Numbers field of the body and of a line is required by the strict
// check; the one pass must leave a body without one of them to the two
// passes, which refuse it. Derived from the field lists, so a Number added
// there is covered here too.
func TestStrictTxnNeedsEveryNumber(t *testing.T) {
	sale := func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(strictSeeds[0]), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := map[string]map[string]any{}
	for _, n := range txnFields.Numbers {
		m := sale()
		delete(m, n)
		cases["the body without "+n] = m
	}
	for _, n := range lineFields.Numbers {
		m := sale()
		delete(m["lines"].([]any)[0].(map[string]any), n)
		cases["a line without "+n] = m
	}
	for name, m := range cases {
		t.Run(name, func(t *testing.T) {
			body, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := strictTxn(body); ok {
				t.Fatalf("one pass took %s", body)
			}
			if _, err := ParseTxn(body); err == nil {
				t.Fatalf("ParseTxn took %s", body)
			}
		})
	}
	whole, err := json.Marshal(sale())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := strictTxn(whole); !ok {
		t.Fatalf("one pass left posedge's sale as re-encoded here: %s", whole)
	}
}
