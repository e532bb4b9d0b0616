package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

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

// fastTxn decodes as json.Unmarshal does, or leaves the body to it: on
// every body checkJSONKeys accepts, a fast result equals Unmarshal's, and
// Unmarshal accepts it.
func FuzzDecodeTxnAgreesWithUnmarshal(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if checkJSONKeys(body, txnFields) != nil {
			return
		}
		fast, ok := fastTxn(body)
		if !ok {
			return
		}
		var want Txn
		if err := json.Unmarshal(body, &want); err != nil {
			t.Fatalf("%q: fast path decoded %+v, json.Unmarshal refuses: %v", body, fast, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Fatalf("%q: fast path %#v, json.Unmarshal %#v", body, fast, want)
		}
	})
}

func TestDecodeTxnAgreesWithUnmarshalOnSeeds(t *testing.T) {
	fastOnes := 0
	for _, s := range decodeSeeds {
		body := []byte(s)
		if checkJSONKeys(body, txnFields) != nil {
			continue
		}
		got, gotErr := decodeTxn(body)
		var want Txn
		wantErr := json.Unmarshal(body, &want)
		if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("%q: decodeTxn %#v, %v; json.Unmarshal %#v, %v", s, got, gotErr, want, wantErr)
		}
		if _, ok := fastTxn(body); ok {
			fastOnes++
		}
	}
	// The fast path must be the common one, or it saves nothing.
	if fastOnes < 5 {
		t.Errorf("only %d seeds took the fast path", fastOnes)
	}
	if _, ok := fastTxn([]byte(decodeSeeds[0])); !ok {
		t.Error("a body as posedge writes it left the fast path")
	}
}
